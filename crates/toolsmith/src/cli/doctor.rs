//! `toolsmith doctor`: what the sandbox can enforce on this machine.

use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use toolsmith_sandbox::{Capabilities, SandboxPolicy};

#[derive(Args)]
pub(crate) struct DoctorArgs {
    /// Print JSON: {"capabilities": {...}, "layers": [{"name","enforced","detail"}]}. Layers
    /// include the hardening: "private /proc", "git protection", "privilege filter", "kernel
    /// keyring".
    #[arg(long)]
    json: bool,
}

/// Prints what the kernel offers and, layer by layer, what the default policy gets here.
/// Exits 0 when every layer is enforced, 1 otherwise.
pub(crate) fn doctor(args: DoctorArgs) -> ExitCode {
    let capabilities = Capabilities::detect();
    let policy = SandboxPolicy::new(".");
    let layers = capabilities.report(&policy);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"capabilities": capabilities, "layers": layers}))
                .expect("JSON values always serialise")
        );
    } else {
        let landlock = capabilities
            .landlock_abi
            .map_or("unavailable".to_string(), |abi| format!("ABI {abi}"));
        println!("kernel            {}", capabilities.kernel);
        println!("landlock          {landlock}");
        println!("openat2           {}", yes_no(capabilities.openat2));
        println!("seccomp           {}", yes_no(capabilities.seccomp));
        println!("user namespaces   {}", yes_no(capabilities.user_namespaces));
        println!("net namespaces    {}", yes_no(capabilities.net_namespaces));
        println!("pid namespaces    {}", yes_no(capabilities.pid_namespaces));
        println!(
            "mount namespaces  {}",
            yes_no(capabilities.mount_namespaces)
        );
        println!("private /proc     {}", yes_no(capabilities.private_proc));
        println!("running as root   {}", yes_no(capabilities.running_as_root));
        println!();
        let width = layers.iter().map(|l| l.name.len()).max().unwrap_or(0);
        for layer in &layers {
            let mark = if layer.enforced {
                "enforced    "
            } else {
                "NOT ENFORCED"
            };
            println!("{:width$}  {mark}  {}", layer.name, layer.detail);
        }
    }
    if layers.iter().all(|l| l.enforced) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(super::EXIT_FAILURE)
    }
}

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
}
