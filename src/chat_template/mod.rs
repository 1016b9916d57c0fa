//! Chat templates: the Jinja template a model ships in `tokenizer.chat_template`, rendered with minijinja
//! the way Hugging Face renders it with Python's jinja2 (`trim_blocks`, `lstrip_blocks`, loop controls,
//! `raise_exception`, `strftime_now`, and Python string methods such as `.strip()` and `.startswith()`).
//!
//! A template comes from a downloaded file, so rendering is bounded: a fuel budget (instructions), a
//! recursion limit and a cap on the output size stop a hostile template from hanging or growing without
//! end.

mod clock;

use std::io::Write;

use minijinja::{Environment, Error, ErrorKind, Value};

/// One message of a conversation.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
    /// An assistant's calls of tools, as templates read them: `{"id", "type": "function",
    /// "function": {"name", "arguments"}}` with the arguments a JSON object.
    #[serde(default)]
    pub tool_calls: Vec<serde_json::Value>,
    /// A tool's answer: the call it answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// The images the message shows, in order, each at an image marker in `content`
    /// (`vision::IMAGE_MARKER`); what the session reads them with is its vision projector.
    #[serde(skip)]
    pub images: Vec<crate::vision::Image>,
}

impl ChatMessage {
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: role.into(),
            content: content.into(),
            ..Default::default()
        }
    }

    /// A message showing `images`, each at a marker of `content`; where it has none, the markers go
    /// before the text, as llama.cpp's mtmd-cli puts them.
    pub fn with_images(
        role: impl Into<String>,
        content: impl Into<String>,
        images: Vec<crate::vision::Image>,
    ) -> ChatMessage {
        let marker = crate::vision::IMAGE_MARKER;
        let mut content = content.into();
        if !images.is_empty() && !content.contains(marker) {
            content = marker.repeat(images.len()) + &content;
        }
        ChatMessage {
            images,
            ..ChatMessage::new(role, content)
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("the chat template is {len} bytes; more than {max} is not accepted")]
    TemplateTooLarge { len: usize, max: usize },
    #[error("the chat template does not parse: {0}")]
    Syntax(String),
    #[error("the chat template refused the conversation: {0}")]
    Raised(String),
    #[error("the chat template ran past its budget of {0} instructions")]
    OutOfFuel(u64),
    #[error("the chat template's output passed {0} bytes")]
    OutputTooLarge(usize),
    #[error("the chat template failed: {0}")]
    Render(String),
}

/// Bounds on one rendering.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_template_bytes: usize,
    /// minijinja instructions; a real template spends a few dozen per message.
    pub fuel: u64,
    pub recursion: usize,
    pub max_output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_template_bytes: 1 << 20,
            fuel: 20_000_000,
            recursion: 100,
            max_output_bytes: 16 << 20,
        }
    }
}

/// Where a model's chat template comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The file's own (`tokenizer.chat_template`).
    File,
    /// The file has none: its family's standard format, as llama.cpp builds it in (named so).
    Family(&'static str),
}

/// Gemma's turns as llama.cpp's built-in `gemma` template writes them: `<start_of_turn>user` /
/// `<start_of_turn>model`, contents trimmed, system messages (Gemma has no system role) joined into
/// the first user turn after a blank line.
const GEMMA: &str = r#"{%- set ns = namespace(system='') -%}
{%- for m in messages -%}
  {%- if m.role == 'system' -%}
    {%- set ns.system = ns.system + (m.content | trim) -%}
  {%- else -%}
    {%- set role = 'model' if m.role == 'assistant' else m.role -%}
    {{- '<start_of_turn>' + role + '
' -}}
    {%- if ns.system and role != 'model' -%}
      {{- ns.system + '

' -}}
      {%- set ns.system = '' -%}
    {%- endif -%}
    {{- (m.content | trim) + '<end_of_turn>
' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<start_of_turn>model
' -}}
{%- endif -%}"#;

/// The chat template a model is rendered with: its file's, else its family's standard format where
/// there is one (Gemma files often ship without one); None where neither is known.
pub fn of_model(h: &crate::gguf::Header) -> Option<(&str, Origin)> {
    if let Some(t) = h.get_str("tokenizer.chat_template") {
        return Some((t, Origin::File));
    }
    let family = match h.architecture()? {
        "gemma" | "gemma2" | "gemma3" => "gemma",
        _ => return None,
    };
    Some((family_template(family)?, Origin::Family(family)))
}

/// A family's standard format, by the name llama.cpp gives its built-in template.
pub fn family_template(family: &str) -> Option<&'static str> {
    match family {
        "gemma" => Some(GEMMA),
        _ => None,
    }
}

/// Renders `template` for `messages` with the default limits. `add_generation_prompt` appends the header
/// that opens the assistant's reply; `bos_token`/`eos_token` are the texts templates may refer to.
pub fn render(
    template: &str,
    messages: &[ChatMessage],
    add_generation_prompt: bool,
    bos_token: &str,
    eos_token: &str,
) -> Result<String, TemplateError> {
    render_with(
        template,
        messages,
        &Extras::default(),
        add_generation_prompt,
        bos_token,
        eos_token,
        Limits::default(),
    )
}

/// Whether a template lays out `tools` itself (it reads the variable): else tools go in a system
/// message.
pub fn takes_tools(template: &str) -> bool {
    template.contains("tools")
}

/// What a chat template reads besides the messages: the tools it lays out (OpenAI's `tools` entries;
/// none: templates see no `tools`) and variables a request sets (llama.cpp's `chat_template_kwargs`:
/// `enable_thinking` for Qwen 3 and Gemma 4, `reasoning_effort` for gpt-oss).
#[derive(Clone, Debug, Default)]
pub struct Extras {
    pub tools: Vec<serde_json::Value>,
    pub variables: Variables,
}

pub type Variables = serde_json::Map<String, serde_json::Value>;

/// The variables Wick sets itself: a request's may not.
pub const RESERVED_VARIABLES: [&str; 5] = [
    "messages",
    "tools",
    "add_generation_prompt",
    "bos_token",
    "eos_token",
];

/// Template variables from a JSON object (a request's `chat_template_kwargs`, `wick chat
/// --chat-template-kwargs`); refused, saying why, where it is not an object or sets a variable Wick
/// sets itself.
pub fn variables(value: &serde_json::Value) -> Result<Variables, String> {
    let serde_json::Value::Object(map) = value else {
        return Err("must be a JSON object".into());
    };
    match RESERVED_VARIABLES
        .iter()
        .find(|&&name| map.contains_key(name))
    {
        Some(name) => Err(format!("may not set {name}")),
        None => Ok(map.clone()),
    }
}

/// As `render`, with the tools and variables of `extras` and explicit limits.
pub fn render_with(
    template: &str,
    messages: &[ChatMessage],
    extras: &Extras,
    add_generation_prompt: bool,
    bos_token: &str,
    eos_token: &str,
    limits: Limits,
) -> Result<String, TemplateError> {
    if template.len() > limits.max_template_bytes {
        return Err(TemplateError::TemplateTooLarge {
            len: template.len(),
            max: limits.max_template_bytes,
        });
    }
    let env = environment(&limits);
    let tmpl = env
        .template_from_named_str("chat template", template)
        .map_err(|e| TemplateError::Syntax(describe(&e)))?;
    // A message has only the keys it uses, as in Python: templates test `"tool_calls" in message`.
    let messages: Vec<Value> = messages
        .iter()
        .map(|m| {
            let mut fields = std::collections::BTreeMap::new();
            fields.insert("role", Value::from(m.role.as_str()));
            fields.insert("content", Value::from(m.content.as_str()));
            if !m.tool_calls.is_empty() {
                fields.insert("tool_calls", Value::from_serialize(&m.tool_calls));
            }
            if let Some(id) = &m.tool_call_id {
                fields.insert("tool_call_id", Value::from(id.as_str()));
            }
            Value::from(fields)
        })
        .collect();
    let tools = (!extras.tools.is_empty()).then(|| Value::from_serialize(&extras.tools));
    let ctx = minijinja::context! {
        messages => messages,
        tools => tools,
        add_generation_prompt => add_generation_prompt,
        bos_token => bos_token,
        eos_token => eos_token,
        ..Value::from_serialize(&extras.variables)
    };
    let mut out = CappedWriter {
        buf: Vec::new(),
        cap: limits.max_output_bytes,
        overflowed: false,
    };
    let result = tmpl.render_captured_to(ctx, &mut out).map(drop);
    match result {
        Ok(()) => Ok(String::from_utf8(out.buf).expect("minijinja writes UTF-8")),
        Err(_) if out.overflowed => Err(TemplateError::OutputTooLarge(limits.max_output_bytes)),
        Err(e) => Err(classify(&e, &limits)),
    }
}

/// The message `raise_exception(...)` errors carry, so they can be told apart from other failures.
const RAISED: &str = "raise_exception: ";

fn environment(limits: &Limits) -> Environment<'static> {
    let mut env = Environment::new();
    // As Hugging Face's jinja2 environment: a block tag's own line break and indentation are not output.
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_fuel(Some(limits.fuel));
    env.set_recursion_limit(limits.recursion);
    // Templates are written against Python: `content.strip()`, `role.startswith('sys')`, `d.items()`.
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function("strftime_now", |format: String| {
        clock::strftime_now(&format)
    });
    env.add_function("raise_exception", |msg: String| -> Result<Value, Error> {
        Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{RAISED}{msg}"),
        ))
    });
    env
}

fn classify(e: &Error, limits: &Limits) -> TemplateError {
    if e.kind() == ErrorKind::OutOfFuel {
        return TemplateError::OutOfFuel(limits.fuel);
    }
    if let Some(msg) = e.detail().and_then(|d| d.strip_prefix(RAISED)) {
        return TemplateError::Raised(msg.to_string());
    }
    TemplateError::Render(describe(e))
}

/// The error with its line and, where minijinja has one, its cause.
fn describe(e: &Error) -> String {
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

/// Collects the output and fails once it passes `cap` bytes.
struct CappedWriter {
    buf: Vec<u8>,
    cap: usize,
    overflowed: bool,
}

impl Write for CappedWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + data.len() > self.cap {
            self.overflowed = true;
            return Err(std::io::Error::other("chat template output too large"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
