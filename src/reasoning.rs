//! A reply's reasoning apart from its answer. Models that think before they answer mark their
//! thoughts: Qwen 3, Qwen3.5 and DeepSeek-R1 write them between `<think>` and `</think>`, Gemma 4
//! between `<|channel>thought` and `<channel|>`; gpt-oss writes harmony messages, `<|channel|>analysis<|message|>…<|end|>` for its thoughts, then
//! `<|start|>assistant<|channel|>final<|message|>…` for the answer. `Channels` reads a reply's text as
//! it comes (markers included) and hands back the reasoning and the content apart, the markers
//! dropped, as OpenAI-style servers answer with `reasoning_content` beside `content`. A harmony
//! message addressed to a function (`to=functions.NAME` in its header) is a tool call, its text the
//! arguments: it comes back apart too.
//!
//! Where a reply starts depends on the prompt: Qwen3.5's template opens `<think>` itself, so its
//! replies begin inside the reasoning; `Channels::after` reads that off the rendered prompt.

/// How a model marks its reasoning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Between an opening and a closing tag, before the answer.
    Tagged(Tags),
    /// OpenAI's harmony messages: the analysis channel is reasoning, the others (final, commentary)
    /// are the answer, but for messages to a function, which are calls.
    Harmony,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tags {
    pub open: &'static str,
    pub close: &'static str,
}

/// One call the reply made; `arguments` is a JSON object as text, as OpenAI returns it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Call {
    pub name: String,
    pub arguments: String,
}

/// Qwen 3, Qwen3.5, DeepSeek-R1.
pub const THINK: Tags = Tags {
    open: "<think>",
    close: "</think>",
};
/// Gemma 4: its thinking is a channel named "thought", opened by a token and the name in text.
pub const GEMMA4_THOUGHT: Tags = Tags {
    open: "<|channel>thought",
    close: "<channel|>",
};
const START: &str = "<|start|>";
const CHANNEL: &str = "<|channel|>";
const MESSAGE: &str = "<|message|>";
/// What ends a harmony message (the last two also end a reply, where they are tokens).
const MESSAGE_ENDS: [&str; 3] = ["<|end|>", "<|return|>", "<|call|>"];
/// A harmony header longer than this is not one: its text is the answer's.
const HEADER_MAX: usize = 256;
/// In a harmony header, what names a function as the message's recipient.
pub const TO_FUNCTION: &str = "to=functions.";

impl Format {
    /// The format of the model whose chat template is `template`, if it reasons.
    pub fn of_template(template: &str) -> Option<Format> {
        if template.contains(CHANNEL) && template.contains(MESSAGE) {
            return Some(Format::Harmony);
        }
        [THINK, GEMMA4_THOUGHT]
            .into_iter()
            .find(|t| template.contains(t.open) && template.contains(t.close))
            .map(Format::Tagged)
    }

    /// The markers' texts: a decoder must write them out even where they are control tokens. A tag
    /// that is a token and a name (`<|channel>thought`) is marked by its token.
    pub fn markers(self) -> Vec<&'static str> {
        match self {
            Format::Tagged(Tags { open, close }) => {
                let token = open.split_inclusive('>').next().unwrap_or(open);
                vec![token, close]
            }
            Format::Harmony => vec![
                START,
                CHANNEL,
                MESSAGE,
                MESSAGE_ENDS[0],
                MESSAGE_ENDS[1],
                MESSAGE_ENDS[2],
                "<|constrain|>",
            ],
        }
    }
}

/// Where the text being read goes.
#[derive(Clone, Debug, PartialEq)]
enum Part {
    /// Nothing but whitespace yet: an opening marker may still come (`<think>`, a harmony header).
    Opening,
    Reasoning,
    Content,
    /// A harmony header, read up to its `<|message|>`: it names the channel and any recipient.
    Header,
    /// A harmony message to the function named: its text is the call's arguments.
    Call(String),
    /// After a harmony message's end, up to the next header: dropped.
    Between,
}

/// Text split into the reasoning and the answer, and the calls of functions that ended in it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Split {
    pub reasoning: String,
    pub content: String,
    pub calls: Vec<Call>,
}

/// Reads a reply's text as it comes and splits it (see the module's comment).
#[derive(Clone, Debug)]
pub struct Channels {
    format: Format,
    part: Part,
    /// Text that may still turn into a marker, a header being read, or whitespace whose part is not
    /// settled yet.
    held: String,
    /// The part began at the last marker: its leading whitespace is dropped.
    fresh: bool,
    /// Some reasoning was written.
    reasoned: bool,
    /// The arguments read so far of the call being read (`Part::Call`).
    arguments: String,
}

impl Channels {
    /// Channels for a reply that begins with nothing read.
    pub fn new(format: Format) -> Channels {
        Channels {
            format,
            part: Part::Opening,
            held: String::new(),
            fresh: true,
            reasoned: false,
            arguments: String::new(),
        }
    }

    /// Channels for a reply that continues `prompt`: the rendered chat prompt, with the reply so far
    /// (markers written) where a reply goes on after the context overflowed.
    pub fn after(format: Format, prompt: &str) -> Channels {
        let mut channels = Channels::new(format);
        match format {
            Format::Tagged(tags) => {
                let open = prompt.rfind(tags.open);
                if open.is_some() && open > prompt.rfind(tags.close) {
                    channels.part = Part::Reasoning;
                }
            }
            // Read the last message of the prompt as if it were the reply's; a header that names no
            // channel yet (the generation prompt's `<|start|>assistant`) leaves the reply to open one.
            Format::Harmony => {
                if let Some(at) = prompt.rfind(START) {
                    channels.part = Part::Between;
                    channels.push(&prompt[at..]);
                    if channels.part == Part::Header && !channels.held.contains(CHANNEL) {
                        channels.part = Part::Opening;
                        channels.held.clear();
                    }
                }
            }
        }
        channels
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// Adds text of the reply; returns what is now settled of each part.
    pub fn push(&mut self, text: &str) -> Split {
        self.held.push_str(text);
        let mut out = Split::default();
        while self.advance(&mut out) {}
        out
    }

    /// The reply ended: what is held goes where it was headed (an unfinished header nowhere).
    pub fn finish(&mut self) -> Split {
        let held = std::mem::take(&mut self.held);
        let mut out = Split::default();
        match self.part.clone() {
            Part::Opening | Part::Content => self.emit_content(&mut out, &held),
            Part::Reasoning => self.emit_reasoning(&mut out, held.trim_end()),
            // A call ends with the reply where nothing follows its arguments (a grammar's end).
            Part::Call(name) => {
                self.arguments.push_str(&held);
                self.emit_call(&mut out, name);
            }
            Part::Header | Part::Between => {}
        }
        out
    }

    /// Reads what `held` settles; true where a marker moved to another part and more may follow.
    fn advance(&mut self, out: &mut Split) -> bool {
        match (self.part.clone(), self.format) {
            (Part::Opening, _) => self.open(),
            (Part::Reasoning, Format::Tagged(tags)) => self.think(out, tags),
            (Part::Content, Format::Tagged(_)) => {
                let text = std::mem::take(&mut self.held);
                self.emit_content(out, &text);
                false
            }
            // Only harmony's headers name a call.
            (Part::Reasoning | Part::Content, Format::Harmony) | (Part::Call(_), _) => {
                self.message(out)
            }
            (Part::Header, _) => self.header(out),
            (Part::Between, _) => self.between(),
        }
    }

    /// Nothing but whitespace read: the opening marker (`<think>`, harmony's `<|channel|>`), the
    /// start of one, or the answer.
    fn open(&mut self) -> bool {
        let opening = match self.format {
            Format::Tagged(tags) => tags.open,
            Format::Harmony => CHANNEL,
        };
        let text = self.held.trim_start();
        if let Some(rest) = text.strip_prefix(opening) {
            let (held, next) = match self.format {
                Format::Tagged(_) => (rest.to_string(), Part::Reasoning),
                // The header's channel marker stays: the header is read from it.
                Format::Harmony => (text.to_string(), Part::Header),
            };
            self.held = held;
            self.enter(next);
            return true;
        }
        if opening.starts_with(text) {
            return false; // all whitespace, or the start of the opening marker
        }
        self.enter(Part::Content);
        true
    }

    /// Tagged reasoning, up to its closing tag.
    fn think(&mut self, out: &mut Split, tags: Tags) -> bool {
        if let Some(at) = self.held.find(tags.close) {
            let before = self.take(at, tags.close.len());
            self.emit_reasoning(out, before.trim_end());
            self.enter(Part::Content);
            return true;
        }
        // Trailing whitespace waits (with what may begin the closing marker after it): it is dropped
        // if the reasoning ends there.
        let marker = self.undecided(&[tags.close]);
        let before = &self.held[..self.held.len() - marker];
        let keep = marker + before.len() - before.trim_end().len();
        let settled = self.take_settled(keep);
        self.emit_reasoning(out, &settled);
        false
    }

    /// A harmony message's text, up to what ends it or the next header.
    fn message(&mut self, out: &mut Split) -> bool {
        let ends = MESSAGE_ENDS
            .iter()
            .map(|&m| (m, Part::Between))
            .chain([(START, Part::Header), (CHANNEL, Part::Header)]);
        let first = ends
            .filter_map(|(m, next)| self.held.find(m).map(|at| (at, m, next)))
            .min_by_key(|(at, ..)| *at);
        let (text, next) = match first {
            Some((at, marker, next)) => {
                // A header keeps its channel marker, as the opening's does.
                let skip = if marker == CHANNEL { 0 } else { marker.len() };
                (self.take(at, skip), Some(next))
            }
            None => {
                let keep = self.undecided(&Format::Harmony.markers());
                (self.take_settled(keep), None)
            }
        };
        match self.part.clone() {
            Part::Reasoning => self.emit_reasoning(out, &text),
            Part::Call(name) => {
                self.arguments.push_str(&text);
                if next.is_some() {
                    self.emit_call(out, name);
                }
            }
            _ => self.emit_content(out, &text),
        }
        let moved = next.is_some();
        if let Some(next) = next {
            self.enter(next);
        }
        moved
    }

    /// A harmony header, up to `<|message|>`: the analysis channel is reasoning, a message to a
    /// function a call, others the answer.
    fn header(&mut self, out: &mut Split) -> bool {
        let Some(at) = self.held.find(MESSAGE) else {
            if self.held.len() > HEADER_MAX {
                let text = std::mem::take(&mut self.held);
                self.enter(Part::Content);
                self.emit_content(out, &text);
            }
            return false;
        };
        let header = self.take(at, MESSAGE.len());
        let channel = header
            .split(CHANNEL)
            .nth(1)
            .and_then(|c| c.split(|ch: char| ch.is_whitespace() || ch == '<').next())
            .unwrap_or("");
        let function = header.split(TO_FUNCTION).nth(1).map(|rest| {
            let end = rest.find(|ch: char| ch.is_whitespace() || ch == '<');
            rest[..end.unwrap_or(rest.len())].to_string()
        });
        self.enter(match (function, channel) {
            (Some(name), _) if !name.is_empty() => Part::Call(name),
            (_, "analysis") => Part::Reasoning,
            _ => Part::Content,
        });
        true
    }

    /// Between harmony messages: dropped up to the next header.
    fn between(&mut self) -> bool {
        let next = [START, CHANNEL]
            .iter()
            .filter_map(|m| self.held.find(m).map(|at| (at, *m)))
            .min();
        if let Some((at, marker)) = next {
            let skip = if marker == CHANNEL { 0 } else { marker.len() };
            self.take(at, skip);
            self.enter(Part::Header);
            return true;
        }
        let keep = self.undecided(&[START, CHANNEL]);
        self.take_settled(keep);
        false
    }

    fn enter(&mut self, part: Part) {
        self.part = part;
        self.fresh = true;
    }

    /// Removes and returns `held[..at]`, and the `skip` bytes after it (a marker).
    fn take(&mut self, at: usize, skip: usize) -> String {
        let text = self.held[..at].to_string();
        self.held.drain(..at + skip);
        text
    }

    /// Removes and returns all of `held` but its last `keep` bytes.
    fn take_settled(&mut self, keep: usize) -> String {
        let at = self.held.len() - keep;
        self.take(at, 0)
    }

    /// Bytes at the end of `held` that begin one of `markers`.
    fn undecided(&self, markers: &[&str]) -> usize {
        let held = self.held.as_str();
        (1..=held.len())
            .rev()
            .filter(|&n| held.is_char_boundary(held.len() - n))
            .find(|&n| {
                markers
                    .iter()
                    .any(|m| m.starts_with(&held[held.len() - n..]))
            })
            .unwrap_or(0)
    }

    /// The call being read, its arguments complete.
    fn emit_call(&mut self, out: &mut Split, name: String) {
        let arguments = std::mem::take(&mut self.arguments);
        out.calls.push(Call {
            name,
            arguments: arguments.trim().to_string(),
        });
    }

    fn emit_content(&mut self, out: &mut Split, text: &str) {
        let text = self.unfreshened(text);
        out.content.push_str(text);
    }

    /// Reasoning text; a blank line parts it from an earlier message's (harmony's analysis may come
    /// in several messages).
    fn emit_reasoning(&mut self, out: &mut Split, text: &str) {
        let opens = self.fresh;
        let text = self.unfreshened(text);
        if text.is_empty() {
            return;
        }
        if opens && self.reasoned {
            out.reasoning.push_str("\n\n");
        }
        self.reasoned = true;
        out.reasoning.push_str(text);
    }

    /// `text` without the whitespace that opens a part.
    fn unfreshened<'a>(&mut self, text: &'a str) -> &'a str {
        if !self.fresh {
            return text;
        }
        let text = text.trim_start();
        self.fresh = text.is_empty();
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The split of `text` fed in pieces of `n` bytes (whole characters), the ends included.
    fn split(channels: &Channels, text: &str, n: usize) -> Split {
        let mut channels = channels.clone();
        let mut all = Split::default();
        let mut add = |s: Split| {
            all.reasoning += &s.reasoning;
            all.content += &s.content;
            all.calls.extend(s.calls);
        };
        let mut rest = text;
        while !rest.is_empty() {
            let mut at = n.min(rest.len());
            while !rest.is_char_boundary(at) {
                at += 1;
            }
            add(channels.push(&rest[..at]));
            rest = &rest[at..];
        }
        add(channels.finish());
        all
    }

    /// Every way of feeding `text` in pieces splits it as `reasoning` and `content`, and no calls.
    fn check(channels: Channels, text: &str, reasoning: &str, content: &str) {
        check_calls(channels, text, (reasoning, content), &[]);
    }

    /// As `check`, with the calls (name, arguments) it makes.
    fn check_calls(channels: Channels, text: &str, split_as: (&str, &str), calls: &[(&str, &str)]) {
        let calls: Vec<Call> = (calls.iter())
            .map(|&(name, arguments)| Call {
                name: name.into(),
                arguments: arguments.into(),
            })
            .collect();
        for n in 1..=text.len().max(1) {
            let s = split(&channels, text, n);
            assert_eq!(
                (s.reasoning.as_str(), s.content.as_str(), &s.calls),
                (split_as.0, split_as.1, &calls),
                "{text:?} in pieces of {n}"
            );
        }
    }

    #[test]
    fn think_splits_the_reasoning_from_the_answer() {
        let fresh = Channels::new(Format::Tagged(THINK));
        check(
            fresh.clone(),
            "<think>\nLet me see.\n</think>\n\nParis.",
            "Let me see.",
            "Paris.",
        );
        // Empty reasoning (thinking switched off by the model), none at all, and a reply that never
        // closes its reasoning.
        check(fresh.clone(), "<think>\n\n</think>\n\nHi", "", "Hi");
        check(
            fresh.clone(),
            "  Hello <think> there",
            "",
            "Hello <think> there",
        );
        check(fresh.clone(), "<think>still going  ", "still going", "");
        // A partial marker that never completes is text.
        check(fresh.clone(), "<thin", "", "<thin");
        check(fresh, "<think>a </thin b", "a </thin b", "");
    }

    #[test]
    fn think_replies_open_where_the_prompt_leaves_them() {
        let template_opened = "<|im_start|>assistant\n<think>\n";
        let opened = Channels::after(Format::Tagged(THINK), template_opened);
        check(opened, "Hmm, 2+2.\n</think>\n\n4", "Hmm, 2+2.", "4");
        let closed = "<|im_start|>assistant\n<think>\n\n</think>\n\n";
        check(Channels::after(Format::Tagged(THINK), closed), "4", "", "4");
        let earlier = "<think>a</think>b<|im_end|><|im_start|>assistant\n";
        check(
            Channels::after(Format::Tagged(THINK), earlier),
            "<think>x</think>y",
            "x",
            "y",
        );
    }

    #[test]
    fn gemma4_thoughts_are_a_channel_named_thought() {
        let format = Format::Tagged(GEMMA4_THOUGHT);
        let reply = "<|channel>thought\nThe user greets.<channel|>Hello!";
        check(Channels::new(format), reply, "The user greets.", "Hello!");
        // Thinking off: the template closes an empty thought itself.
        let prompt = "<|turn>model\n<|channel>thought\n<channel|>";
        check(Channels::after(format, prompt), "Hello!", "", "Hello!");
        assert_eq!(format.markers(), ["<|channel>", "<channel|>"]);
    }

    #[test]
    fn harmony_splits_analysis_from_final() {
        let prompt = "<|start|>user<|message|>Hi<|end|><|start|>assistant";
        let channels = Channels::after(Format::Harmony, prompt);
        let reply = "<|channel|>analysis<|message|>User greets. Reply.<|end|>\
                     <|start|>assistant<|channel|>final<|message|>Hello!";
        check(channels.clone(), reply, "User greets. Reply.", "Hello!");
        // Two analysis messages, then a commentary preamble and a final answer.
        let reply = "<|channel|>analysis<|message|>One.<|end|><|start|>assistant<|channel|>analysis\
                     <|message|>Two.<|end|><|start|>assistant<|channel|>commentary<|message|>Checking. \
                     <|end|><|start|>assistant<|channel|>final<|message|>Done.<|return|>";
        check(channels.clone(), reply, "One.\n\nTwo.", "Checking. Done.");
        // A reply without harmony's header (a grammar's JSON) is all answer.
        check(channels.clone(), "{\"a\": 1}", "", "{\"a\": 1}");
        // A header that never ends gives nothing; one far too long is text.
        check(channels.clone(), "<|channel|>analysis", "", "");
        let long = format!("<|channel|>{}", "x".repeat(HEADER_MAX));
        check(channels, &long, "", &long);
    }

    /// A message to a function is a call, its recipient in the header as the model writes it (after
    /// the channel) or as gpt-oss's template renders earlier calls (before it); the arguments end with
    /// `<|call|>` or with the reply.
    #[test]
    fn harmony_messages_to_functions_are_calls() {
        let channels = Channels::after(Format::Harmony, "<|start|>assistant");
        let reply = "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant\
                     <|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>\
                     {\"city\": \"Paris\"}<|call|>";
        let call = [("get_weather", "{\"city\": \"Paris\"}")];
        check_calls(channels.clone(), reply, ("Need the weather.", ""), &call);
        let unended = reply.trim_end_matches("<|call|>");
        check_calls(channels.clone(), unended, ("Need the weather.", ""), &call);
        let rendered = "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant \
                        to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}\
                        <|call|>";
        check_calls(channels.clone(), rendered, ("Need the weather.", ""), &call);
        // A commentary message to no one is the answer's.
        let said = "<|channel|>commentary<|message|>Looking.<|end|>";
        check(channels, said, "", "Looking.");
    }

    #[test]
    fn harmony_goes_on_inside_a_message_the_prompt_left_open() {
        let prompt = "<|start|>assistant<|channel|>analysis<|message|>So far";
        let channels = Channels::after(Format::Harmony, prompt);
        let reply = " more.<|end|><|start|>assistant<|channel|>final<|message|>Yes.";
        check(channels, reply, " more.", "Yes.");
    }

    #[test]
    fn formats_come_from_templates() {
        assert_eq!(
            Format::of_template("{{'<|start|>assistant<|channel|>final<|message|>'}}"),
            Some(Format::Harmony)
        );
        let qwen3 = "{%- if '</think>' in content %}<think>\n{% endif %}";
        assert_eq!(Format::of_template(qwen3), Some(Format::Tagged(THINK)));
        let gemma4 = "{{- '<|channel>thought\n<channel|>' -}}";
        assert_eq!(
            Format::of_template(gemma4),
            Some(Format::Tagged(GEMMA4_THOUGHT))
        );
        assert_eq!(Format::of_template("{{ '<|im_start|>' }}"), None);
    }
}
