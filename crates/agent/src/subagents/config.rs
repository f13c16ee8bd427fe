//! [`SubagentConfig`]: the Standard Agents spec's `SubagentToolConfig`, how an agent behaves as a
//! tool.

use serde::{Deserialize, Serialize};

/// How an agent behaves as a tool: the Standard Agents spec's `SubagentToolConfig` without its
/// `name` (the tool has its own). The JSON form uses the Standard Agents spec's camelCase keys;
/// unknown keys are rejected.
///
/// ```
/// use toolsmith_agent::{ParentCommunication, SubagentConfig};
///
/// let config: SubagentConfig = serde_json::from_str(
///     r#"{"blocking": false, "initUserMessageProperty": "task",
///         "resumable": {"receives_messages": "side_a", "maxInstances": 2}}"#,
/// )
/// .unwrap();
/// assert!(!config.blocking);
/// let resumable = config.resumable.unwrap();
/// assert_eq!(resumable.max_instances, Some(2));
/// assert_eq!(resumable.parent_communication, ParentCommunication::Implicit);
/// assert!(serde_json::from_str::<SubagentConfig>(r#"{"blockign": true}"#).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubagentConfig {
    /// `true` (the default): the call returns the child's answer. `false`: the call returns at
    /// once with an acknowledgement, and the child's result is queued to the parent as a user
    /// message when it finishes; the parent's run does not end before it arrives.
    #[serde(default = "yes")]
    pub blocking: bool,
    /// The input property whose value becomes the child's first user message; the tool's input
    /// schema has it as a required string. Default: `prompt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_user_message_property: Option<String>,
    /// The input property holding `/attachments/<file>` paths (a string or a list) handed to
    /// the child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_attachments_property: Option<String>,
    /// The input property naming the child instance; the child thread is tagged
    /// `name:<value>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_agent_name_property: Option<String>,
    /// The tool's own arguments (`inputSchema`): a JSON Schema object whose `properties` (and
    /// `required`) are merged with the init properties the runtime adds; arguments outside
    /// both are still rejected. The arguments given are passed on to the child: its first
    /// message ends with a line `Arguments: {…}` (compact JSON, in the schema's order) and its
    /// run's metadata holds them under `arguments`. A property named like an init property is
    /// an error ([`check_input_schema`](Self::check_input_schema)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<serde_json::Value>,
    /// Spawn the child before the parent's first model step.
    #[serde(default, skip_serializing_if = "Immediate::is_off")]
    pub immediate: Immediate,
    /// The variable that enables the tool: it is offered only when the variable is `true`,
    /// `1` or `yes` (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<String>,
    /// `None` (`false` in JSON, the default): tool-call semantics, one child per call. The
    /// object form: long-lived instances driven by `subagent_create` and `subagent_message`.
    #[serde(
        default,
        with = "resumable_or_false",
        skip_serializing_if = "Option::is_none"
    )]
    pub resumable: Option<Resumable>,
}

fn yes() -> bool {
    true
}

impl Default for SubagentConfig {
    fn default() -> Self {
        SubagentConfig {
            blocking: true,
            init_user_message_property: None,
            init_attachments_property: None,
            init_agent_name_property: None,
            input_schema: None,
            immediate: Immediate::default(),
            optional: None,
            resumable: None,
        }
    }
}

impl SubagentConfig {
    /// The input property that carries the child's task.
    pub fn task_property(&self) -> &str {
        self.init_user_message_property
            .as_deref()
            .unwrap_or("prompt")
    }

    /// The init properties the runtime adds to the input schema: the task property, then the
    /// name and attachments properties when configured, each with its key.
    pub fn init_properties(&self) -> Vec<(&'static str, &str)> {
        let mut init = vec![("initUserMessageProperty", self.task_property())];
        if let Some(name) = &self.init_agent_name_property {
            init.push(("initAgentNameProperty", name.as_str()));
        }
        if let Some(files) = &self.init_attachments_property {
            init.push(("initAttachmentsProperty", files.as_str()));
        }
        init
    }

    /// The names of the tool's own arguments: the properties of `inputSchema`, in its order.
    pub fn own_arguments(&self) -> Vec<&str> {
        self.input_schema
            .as_ref()
            .and_then(|schema| schema.get("properties"))
            .and_then(serde_json::Value::as_object)
            .map(|properties| properties.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// Checks `inputSchema`: an object whose `type`, when given, is `"object"`, whose
    /// `properties` is an object and whose `required` lists strings; no property may be named
    /// like an init property.
    ///
    /// # Errors
    ///
    /// What is wrong, naming the keys: `inputSchema.properties.task clashes with
    /// initUserMessageProperty "task"`.
    ///
    /// ```
    /// use toolsmith_agent::SubagentConfig;
    ///
    /// let config: SubagentConfig = serde_json::from_str(
    ///     r#"{"initUserMessageProperty": "task",
    ///         "inputSchema": {"properties": {"task": {"type": "string"}}}}"#,
    /// )
    /// .unwrap();
    /// assert_eq!(
    ///     config.check_input_schema().unwrap_err(),
    ///     "inputSchema.properties.task clashes with initUserMessageProperty \"task\""
    /// );
    /// ```
    pub fn check_input_schema(&self) -> Result<(), String> {
        use serde_json::Value;
        let Some(schema) = &self.input_schema else {
            return Ok(());
        };
        let Value::Object(schema) = schema else {
            return Err("inputSchema must be a JSON Schema object".into());
        };
        if schema.get("type").is_some_and(|t| t != "object") {
            return Err("inputSchema.type must be \"object\"".into());
        }
        match schema.get("properties") {
            None | Some(Value::Object(_)) => {}
            Some(_) => return Err("inputSchema.properties must be an object".into()),
        }
        match schema.get("required") {
            None => {}
            Some(Value::Array(names)) if names.iter().all(Value::is_string) => {}
            Some(_) => return Err("inputSchema.required must be a list of names".into()),
        }
        let own = self.own_arguments();
        let init = self.init_properties();
        let required = schema.get("required").and_then(Value::as_array);
        if let Some(name) = required
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find(|name| !own.contains(name) && !init.iter().any(|(_, i)| i == name))
        {
            return Err(format!(
                "inputSchema.required names \"{name}\", which is not in inputSchema.properties"
            ));
        }
        for own in own {
            if let Some((key, _)) = init.iter().find(|(_, name)| *name == own) {
                return Err(format!(
                    "inputSchema.properties.{own} clashes with {key} \"{own}\""
                ));
            }
        }
        Ok(())
    }
}

/// The `immediate` setting: `false`, `true`, or the object form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Immediate {
    /// `false` or `true`.
    Flag(bool),
    /// Spawn at once, with per-instance variables.
    With(ImmediateEnv),
}

impl Immediate {
    /// Whether the child spawns before the first step.
    pub fn is_on(&self) -> bool {
        !self.is_off()
    }

    fn is_off(&self) -> bool {
        matches!(self, Immediate::Flag(false))
    }

    /// The per-instance variables of the object form.
    pub fn env(&self) -> Option<&ImmediateEnv> {
        match self {
            Immediate::With(env) => Some(env),
            Immediate::Flag(_) => None,
        }
    }
}

impl Default for Immediate {
    fn default() -> Self {
        Immediate::Flag(false)
    }
}

/// The object form of [`Immediate`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImmediateEnv {
    /// The variable whose value names the child (the only values besides `descriptionEnv`'s
    /// that may be shown to a model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_env: Option<String>,
    /// The variable whose value is the child's task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description_env: Option<String>,
    /// Variables copied into the child. Runtime-only: never shown to a model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scoped_env: Vec<String>,
}

/// The object form of `resumable`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resumable {
    /// Which side of the child receives the parent's messages (the Standard Agents spec keeps
    /// this key in snake case): `side_a` as user messages, `side_b` as assistant messages.
    #[serde(rename = "receives_messages")]
    pub receives_messages: Side,
    /// At most this many instances; at the limit `subagent_create` is no longer offered and
    /// messages go to the existing instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_instances: Option<u32>,
    /// How the child's completion reaches the parent.
    #[serde(default)]
    pub parent_communication: ParentCommunication,
}

/// Which side of a resumable child the parent's messages reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// As user messages.
    SideA,
    /// As assistant messages.
    SideB,
}

/// How a resumable child's completion reaches its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParentCommunication {
    /// The child's reply is returned to the parent each time (the default).
    #[default]
    Implicit,
    /// Only what the child sends with `notify_parent` reaches the parent.
    Explicit,
}

/// `resumable: false | {…}`.
mod resumable_or_false {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    use super::Resumable;

    const EXPECTED: &str = "resumable is false or an object {\"receives_messages\": \"side_a\" | \
                            \"side_b\", \"maxInstances\"?, \"parentCommunication\"?}";

    pub(super) fn serialize<S: Serializer>(
        value: &Option<Resumable>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(resumable) => resumable.serialize(serializer),
            None => false.serialize(serializer),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Resumable>, D::Error> {
        // Read as a value first: an untagged enum's error would say only that nothing matched.
        match Value::deserialize(deserializer)? {
            Value::Bool(false) => Ok(None),
            object @ Value::Object(_) => serde_json::from_value(object)
                .map(Some)
                .map_err(|e| serde::de::Error::custom(format!("{EXPECTED}: {e}"))),
            _ => Err(serde::de::Error::custom(EXPECTED)),
        }
    }
}
