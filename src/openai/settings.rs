//! What a request asks of the reply, checked and defaulted as OpenAI does (`Settings`), the sampler
//! it is drawn with, and the finished reply as OpenAI answers it (`Answer`).

use super::{invalid, log_probs, Content, Grammar, InvalidRequest, PredictionField};
use super::{ResponseFormat, Sampling, Strings};
use crate::reply::{Completion, FinishReason};
use crate::sampler::{Sampler, SamplerConfig};
use crate::session::Session;
use crate::tools::{Call, ToolUse};

/// Fields OpenAI takes that would change the answer and Wick does not honour yet, refused by name
/// (`tools` and `tool_choice` land here only in text completions; chat takes them). A field whose
/// value is its default (null, false, 0, an empty list, "none") asks for nothing and passes.
const NOT_HONOURED: &[&str] = &[
    "tools",
    "tool_choice",
    "functions",
    "function_call",
    "audio",
    "modalities",
    "web_search_options",
    "reasoning_effort",
];

/// A presence or frequency penalty: from -2 to 2, as OpenAI takes them; 0 when not given.
fn penalty(value: Option<f32>, param: &'static str) -> Result<f32, InvalidRequest> {
    match value.unwrap_or(0.0) {
        p if (-2.0..=2.0).contains(&p) => Ok(p),
        _ => Err(invalid(format!("{param} must be between -2 and 2"), param)),
    }
}

/// `logit_bias`'s (token, bias) pairs, by token: ids as strings of digits, biases from -100 to 100.
/// Whether each id is in the model's vocabulary is for `sampler` to say.
fn logit_bias(
    asked: Option<std::collections::BTreeMap<String, f32>>,
) -> Result<Vec<(u32, f32)>, InvalidRequest> {
    let mut biases = std::collections::BTreeMap::new();
    for (key, bias) in asked.unwrap_or_default() {
        let Ok(token) = key.parse::<u32>() else {
            return Err(invalid(
                format!("logit_bias keys are token ids, not {key:?}"),
                "logit_bias",
            ));
        };
        if !(-100.0..=100.0).contains(&bias) {
            return Err(invalid(
                format!("logit_bias values are from -100 to 100 ({token}: {bias})"),
                "logit_bias",
            ));
        }
        biases.insert(token, bias);
    }
    Ok(biases.into_iter().collect())
}

/// A request's sampling settings, checked and defaulted as OpenAI does.
pub struct Settings {
    pub sampler: SamplerConfig,
    /// What the reply must match, if anything.
    pub grammar: Option<Grammar>,
    pub max_tokens: Option<usize>,
    pub stop: Vec<String>,
    pub stream: bool,
    pub include_usage: bool,
    /// Report each token's log-probability and this many alternatives (`Sampler::log_probs`).
    pub log_probs: Option<usize>,
    /// What the reply is expected to say (`Session::predict`).
    pub prediction: Option<String>,
}

impl Settings {
    /// `default_seed` seeds a request that names none.
    pub fn from(s: Sampling, default_seed: u64) -> Result<Settings, InvalidRequest> {
        let temperature = s.temperature.unwrap_or(1.0);
        if !(0.0..=2.0).contains(&temperature) {
            return Err(invalid(
                "temperature must be between 0 and 2",
                "temperature",
            ));
        }
        let top_p = s.top_p.unwrap_or(1.0);
        if !(0.0..=1.0).contains(&top_p) {
            return Err(invalid("top_p must be between 0 and 1", "top_p"));
        }
        let min_p = s.min_p.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&min_p) {
            return Err(invalid("min_p must be between 0 and 1", "min_p"));
        }
        let repeat_penalty = s.repeat_penalty.unwrap_or(1.0);
        if !(repeat_penalty > 0.0 && repeat_penalty.is_finite()) {
            return Err(invalid(
                "repeat_penalty must be a positive number",
                "repeat_penalty",
            ));
        }
        let presence_penalty = penalty(s.presence_penalty, "presence_penalty")?;
        let frequency_penalty = penalty(s.frequency_penalty, "frequency_penalty")?;
        if s.n.is_some_and(|n| n != 1) {
            return Err(invalid("only n = 1 is supported", "n"));
        }
        let max_tokens = s.max_completion_tokens.or(s.max_tokens);
        if max_tokens == Some(0) {
            return Err(invalid("max_tokens must be at least 1", "max_tokens"));
        }
        let stop = s.stop.map(Strings::into_vec).unwrap_or_default();
        if stop.len() > 4 {
            return Err(invalid("at most 4 stop sequences", "stop"));
        }
        let log_probs = log_probs::asked(&s.other)?;
        for &field in NOT_HONOURED {
            if s.other.get(field).is_some_and(asks_for_something) {
                return Err(invalid(
                    format!("{field} is not supported by this server"),
                    field,
                ));
            }
        }
        let prediction = s.prediction.map(predicted_text).transpose()?;
        let logit_bias = logit_bias(s.logit_bias)?;
        let grammar = match s.response_format {
            None | Some(ResponseFormat::Text) => None,
            Some(ResponseFormat::JsonObject) => Some(Grammar::JsonObject),
            Some(ResponseFormat::JsonSchema { json_schema }) => Some(Grammar::JsonSchema(
                json_schema.schema.unwrap_or(serde_json::json!({})),
            )),
        };
        Ok(Settings {
            grammar,
            sampler: SamplerConfig {
                temperature,
                top_k: s.top_k.unwrap_or(0) as usize,
                top_p,
                min_p,
                repeat_penalty,
                presence_penalty,
                frequency_penalty,
                repeat_last_n: 64,
                seed: s.seed.unwrap_or(default_seed),
                logit_bias,
            },
            max_tokens: max_tokens.map(|n| n as usize),
            stop,
            stream: s.stream,
            include_usage: s.stream_options.is_some_and(|o| o.include_usage),
            log_probs,
            prediction,
        })
    }
}

/// A prediction's text: its content, a string or text parts.
fn predicted_text(prediction: PredictionField) -> Result<String, InvalidRequest> {
    let PredictionField::Content { content } = prediction;
    match content {
        Content::Text(text) => Ok(text),
        Content::Parts(parts) => parts
            .into_iter()
            .map(|p| match (p.kind.as_str(), p.text) {
                ("text", Some(text)) => Ok(text),
                _ => Err(invalid(
                    format!("a prediction's parts are text, not {:?}", p.kind),
                    "prediction",
                )),
            })
            .collect(),
    }
}

/// The sampler a request's reply is drawn with: its settings, held to the tools' grammar where tools
/// may be called, else to the response format's. A grammar that cannot be used is refused naming the
/// field it came from.
pub fn sampler(
    session: &mut Session,
    config: SamplerConfig,
    tools: Option<&ToolUse>,
    response_format: Option<&Grammar>,
    log_probs: Option<usize>,
) -> Result<Sampler, InvalidRequest> {
    (config.check_logit_bias(session.n_vocab())).map_err(|e| invalid(e, "logit_bias"))?;
    let mut sampler = Sampler::new(config);
    sampler.log_probs = log_probs;
    let (grammar, field) = match tools.and_then(ToolUse::grammar) {
        Some(g) => (Some(g), "tools"),
        None => (response_format.cloned(), "response_format"),
    };
    if let Some(grammar) = grammar {
        let constraint = session
            .constraint(&grammar)
            .map_err(|e| invalid(format!("the {field} cannot be used: {e}"), field))?;
        sampler.constraint = Some(constraint);
    }
    Ok(sampler)
}

/// A finished reply as OpenAI answers it: its text (with tools, what is left once the calls are read
/// out), the calls, and the finish_reason (`tool_calls` where it called).
pub struct Answer {
    pub content: String,
    pub calls: Vec<Call>,
    pub finish_reason: &'static str,
}

impl Answer {
    pub fn of(completion: &Completion, tools: Option<&ToolUse>) -> Answer {
        let (text, finish) = (&completion.text, completion.finish);
        let reply = tools.map(|t| t.read(text, &completion.calls));
        let (content, calls) = match reply {
            Some(r) => (r.content.unwrap_or_default(), r.calls),
            None => (text.to_string(), Vec::new()),
        };
        let finish_reason = match finish {
            _ if !calls.is_empty() => "tool_calls",
            FinishReason::Stop | FinishReason::Cancelled => "stop",
            FinishReason::Length | FinishReason::ContextFull => "length",
        };
        Answer {
            content,
            calls,
            finish_reason,
        }
    }
}

/// Whether a field's value asks for anything: not null, false, zero or empty.
fn asks_for_something(value: &serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::Null | Value::Bool(false) => false,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::Array(a) => !a.is_empty(),
        Value::String(s) => s != "none",
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::ChatRequest;

    fn settings(json: &str) -> Result<Settings, InvalidRequest> {
        let request: ChatRequest = serde_json::from_str(json).unwrap();
        Settings::from(request.sampling, 1)
    }

    #[test]
    fn llama_cpp_sampling_fields_reach_the_sampler() {
        let messages = r#""messages": [{"role": "user", "content": "hi"}]"#;
        let plain = settings(&format!("{{{messages}}}")).unwrap().sampler;
        assert_eq!(
            (plain.top_k, plain.min_p, plain.repeat_penalty),
            (0, 0.0, 1.0)
        );
        let json = format!(r#"{{{messages}, "top_k": 40, "min_p": 0.05, "repeat_penalty": 1.1}}"#);
        let s = settings(&json).unwrap().sampler;
        assert_eq!((s.top_k, s.min_p, s.repeat_penalty), (40, 0.05, 1.1));
        let json = format!(r#"{{{messages}, "presence_penalty": 0.5, "frequency_penalty": -1.5}}"#);
        let s = settings(&json).unwrap().sampler;
        assert_eq!((s.presence_penalty, s.frequency_penalty), (0.5, -1.5));
        for (field, value) in [
            ("min_p", "1.5"),
            ("repeat_penalty", "0"),
            ("repeat_penalty", "-1"),
            ("presence_penalty", "2.5"),
            ("frequency_penalty", "-3"),
        ] {
            let json = format!(r#"{{{messages}, "{field}": {value}}}"#);
            let e = settings(&json).err().expect("refused");
            assert_eq!(e.param, field, "{}", e.message);
        }
    }

    #[test]
    fn response_format_becomes_the_grammar() {
        let messages = r#""messages": [{"role": "user", "content": "hi"}]"#;
        let grammar = |format: &str| {
            let json = format!(r#"{{{messages}, "response_format": {format}}}"#);
            settings(&json).unwrap().grammar
        };
        assert_eq!(grammar(r#"{"type": "text"}"#), None);
        assert_eq!(
            grammar(r#"{"type": "json_object"}"#),
            Some(Grammar::JsonObject)
        );
        let schema = r#"{"type": "object", "properties": {"a": {"type": "integer"}}}"#;
        let format = format!(
            r#"{{"type": "json_schema", "json_schema": {{"name": "x", "schema": {schema}, "strict": true}}}}"#
        );
        let expected: serde_json::Value = serde_json::from_str(schema).unwrap();
        assert_eq!(grammar(&format), Some(Grammar::JsonSchema(expected)));
    }

    #[test]
    fn fields_that_would_change_the_answer_are_refused_by_name() {
        let messages = r#""messages": [{"role": "user", "content": "hi"}]"#;
        for (field, value) in [("audio", r#"{"voice": "alloy"}"#), ("functions", r#"[{}]"#)] {
            let json = format!(r#"{{{messages}, "{field}": {value}}}"#);
            let e = settings(&json).err().expect("refused");
            assert_eq!(e.param, field, "{}", e.message);
        }
        // Values that ask for nothing, and fields that do not change the answer, pass.
        for (field, value) in [
            ("logprobs", "false"),
            ("logit_bias", "null"),
            ("user", r#""someone""#),
        ] {
            let json = format!(r#"{{{messages}, "{field}": {value}}}"#);
            assert!(settings(&json).is_ok(), "{field}: {value}");
        }
    }

    #[test]
    fn a_logit_bias_is_token_ids_to_biases_from_minus_100_to_100() {
        let messages = r#""messages": [{"role": "user", "content": "hi"}]"#;
        let with = |bias: &str| settings(&format!(r#"{{{messages}, "logit_bias": {bias}}}"#));
        let asked = with(r#"{"15": 10, "3": -100, "7": 0.5}"#).unwrap();
        let by_token = vec![(3, -100.0), (7, 0.5), (15, 10.0)];
        assert_eq!(asked.sampler.logit_bias, by_token);
        assert!(with("null").unwrap().sampler.logit_bias.is_empty());
        for bad in [
            r#"{"a": 1}"#,
            r#"{"-1": 1}"#,
            r#"{"1": 100.5}"#,
            r#"{"1": -101}"#,
        ] {
            let e = with(bad).err().expect("refused");
            assert_eq!(e.param, "logit_bias", "{bad}: {}", e.message);
        }
    }

    #[test]
    fn a_prediction_is_its_content_as_text() {
        let messages = r#""messages": [{"role": "user", "content": "hi"}]"#;
        let predicted = |value: &str| {
            let json = format!(r#"{{{messages}, "prediction": {value}}}"#);
            serde_json::from_str::<ChatRequest>(&json)
                .map_err(|e| e.to_string())
                .and_then(|r| Settings::from(r.sampling, 1).map_err(|e| e.message))
                .map(|s| s.prediction)
        };
        assert_eq!(predicted("null").unwrap(), None);
        let text = r#"{"type": "content", "content": "def f():\n    return 1"}"#;
        assert_eq!(predicted(text).unwrap().unwrap(), "def f():\n    return 1");
        let parts = r#"{"type": "content", "content": [{"type": "text", "text": "a"},
            {"type": "text", "text": "b"}]}"#;
        assert_eq!(predicted(parts).unwrap().unwrap(), "ab");
        let image = r#"{"type": "content", "content": [{"type": "image_url",
            "image_url": {"url": "data:image/png;base64,"}}]}"#;
        assert!(predicted(image).unwrap_err().contains("text"));
        assert!(predicted(r#"{"type": "audio", "content": "a"}"#).is_err());
    }

    #[test]
    fn log_probabilities_are_asked_as_chat_and_text_completions_ask() {
        let messages = r#""messages": [{"role": "user", "content": "hi"}]"#;
        let asked = |extra: &str| settings(&format!("{{{messages}{extra}}}")).map(|s| s.log_probs);
        assert_eq!(asked("").unwrap(), None);
        assert_eq!(asked(r#", "logprobs": false"#).unwrap(), None);
        assert_eq!(asked(r#", "logprobs": true"#).unwrap(), Some(0));
        assert_eq!(
            asked(r#", "logprobs": true, "top_logprobs": 20"#).unwrap(),
            Some(20)
        );
        assert_eq!(asked(r#", "logprobs": 3"#).unwrap(), Some(3));
        for (bad, field) in [
            (r#", "logprobs": true, "top_logprobs": 21"#, "top_logprobs"),
            (r#", "top_logprobs": 2"#, "top_logprobs"),
            (r#", "logprobs": -1"#, "logprobs"),
            (r#", "logprobs": "yes""#, "logprobs"),
        ] {
            assert_eq!(asked(bad).expect_err(bad).param, field);
        }
    }
}
