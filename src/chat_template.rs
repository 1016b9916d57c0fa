//! Chat templates (`tokenizer.chat_template`, Jinja) rendered with minijinja, with limits so a hostile
//! template cannot hang or exhaust memory.

use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("chat template: {0}")]
    Render(String),
    #[error("chat template output exceeds {0} bytes")]
    TooLong(usize),
}

/// Instructions a render may take: far above any real template, far below a hang.
const FUEL: u64 = 5_000_000;
const MAX_TEMPLATE: usize = 256 << 10;
const MAX_OUTPUT: usize = 16 << 20;

pub fn render(
    template: &str,
    messages: &[ChatMessage],
    add_generation_prompt: bool,
    bos_token: &str,
    eos_token: &str,
) -> Result<String, TemplateError> {
    if template.len() > MAX_TEMPLATE {
        return Err(TemplateError::Render(format!(
            "the template is larger than {MAX_TEMPLATE} bytes"
        )));
    }
    let mut env = minijinja::Environment::new();
    env.set_fuel(Some(FUEL));
    env.set_recursion_limit(100);
    env.add_function(
        "raise_exception",
        |msg: String| -> Result<String, minijinja::Error> {
            Err(minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                msg,
            ))
        },
    );
    let err = |e: minijinja::Error| TemplateError::Render(format!("{e:#}"));
    env.add_template("chat", template).map_err(err)?;
    let ctx = minijinja::context! {
        messages => messages,
        add_generation_prompt => add_generation_prompt,
        bos_token => bos_token,
        eos_token => eos_token,
    };
    let out = env
        .get_template("chat")
        .map_err(err)?
        .render(ctx)
        .map_err(err)?;
    if out.len() > MAX_OUTPUT {
        return Err(TemplateError::TooLong(MAX_OUTPUT));
    }
    Ok(out)
}
