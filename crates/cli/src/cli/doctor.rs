//! `toolsmith doctor`: what the sandbox can enforce on this machine.

use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use toolsmith_sandbox::exec::CgroupSupport;
use toolsmith_sandbox::{Capabilities, Layer, SandboxPolicy};

#[derive(Args)]
pub(crate) struct DoctorArgs {
    /// Print JSON: {"capabilities": {...}, "layers": [{"name","enforced","detail"}]}. Layers
    /// include the hardening: "private /proc", "git protection", "privilege filter", "kernel
    /// keyring", "tree limits"; "cgroups" says what control groups this process can make.
    #[arg(long)]
    json: bool,
}

/// Prints what the kernel offers and, layer by layer, what the default policy gets here.
/// Exits 0 when every layer is enforced, 1 otherwise.
pub(crate) fn doctor(args: DoctorArgs) -> ExitCode {
    let capabilities = Capabilities::detect();
    let policy = SandboxPolicy::new(".");
    let mut layers = capabilities.report(&policy);
    let cgroups = CgroupSupport::detect();
    layers.push(tree_limits(&cgroups, capabilities.running_as_root));
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "capabilities": capabilities,
                "cgroups": cgroups.describe(),
                "layers": layers,
            }))
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
        println!("cgroups           {}", cgroups.describe());
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

/// The memory and process caps of a command's whole tree: a control group per command where one
/// can be made; otherwise per-process rlimits, which bound the process count only when not root
/// (the kernel ignores `RLIMIT_NPROC` for root).
fn tree_limits(cgroups: &CgroupSupport, root: bool) -> Layer {
    let (enforced, detail) = if cgroups.memory() && cgroups.pids() {
        (
            true,
            format!("a control group per command: {}", cgroups.describe()),
        )
    } else if root {
        (
            false,
            format!(
                "{}: as root the tree's processes and memory are bounded per process only",
                cgroups.describe()
            ),
        )
    } else {
        (
            true,
            format!(
                "RLIMIT_NPROC and RLIMIT_DATA per process ({}): memory is bounded per process",
                cgroups.describe()
            ),
        )
    };
    Layer {
        name: "tree limits".into(),
        enforced,
        detail,
    }
}

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
}
