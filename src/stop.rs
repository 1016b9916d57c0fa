//! Stop strings (OpenAI's `stop`): generation ends where the text produces one of them, and neither it
//! nor anything after it is returned. While streaming, text that could still become a stop string is
//! held back until the next piece settles it.

pub struct StopStrings {
    stops: Vec<String>,
    held: String,
}

impl StopStrings {
    pub fn new(stops: &[String]) -> StopStrings {
        StopStrings {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            held: String::new(),
        }
    }

    /// Adds generated text. Returns the text that is now certain to be output, and whether a stop string
    /// was reached (the returned text then ends right before it).
    pub fn push(&mut self, piece: &str) -> (String, bool) {
        self.held.push_str(piece);
        let first_stop = self.stops.iter().filter_map(|s| self.held.find(s)).min();
        if let Some(at) = first_stop {
            self.held.truncate(at);
            return (std::mem::take(&mut self.held), true);
        }
        let keep = self.undecided_suffix();
        let out = self.held[..self.held.len() - keep].to_string();
        self.held.drain(..self.held.len() - keep);
        (out, false)
    }

    /// The text held back at the end of generation: it did not become a stop string.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }

    /// Bytes at the end of the held text that begin some stop string.
    fn undecided_suffix(&self) -> usize {
        let held = self.held.as_str();
        (1..=held.len())
            .rev()
            .filter(|&n| held.is_char_boundary(held.len() - n))
            .find(|&n| {
                let tail = &held[held.len() - n..];
                self.stops.iter().any(|s| s.starts_with(tail))
            })
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], pieces: &[&str]) -> (String, bool) {
        let stops: Vec<String> = stops.iter().map(|s| s.to_string()).collect();
        let mut s = StopStrings::new(&stops);
        let mut out = String::new();
        for p in pieces {
            let (text, stopped) = s.push(p);
            out += &text;
            if stopped {
                return (out, true);
            }
        }
        out += &s.finish();
        (out, false)
    }

    #[test]
    fn stops_across_pieces_and_drops_the_stop() {
        assert_eq!(
            run(&["\n\n"], &["Paris", ".\n", "\nThe"]),
            ("Paris.".into(), true)
        );
        assert_eq!(run(&["END"], &["a E", "N", "Dz"]), ("a ".into(), true));
    }

    #[test]
    fn held_text_that_never_stops_comes_out() {
        assert_eq!(run(&["END"], &["a E", "N", "d"]), ("a ENd".into(), false));
        assert_eq!(run(&["END"], &["EN"]), ("EN".into(), false));
    }

    #[test]
    fn the_earliest_stop_wins_and_empty_stops_are_ignored() {
        assert_eq!(run(&["", "c", "ab"], &["xabc"]), ("x".into(), true));
    }

    #[test]
    fn holds_back_only_what_could_still_stop() {
        let stops = vec!["</s>".to_string()];
        let mut s = StopStrings::new(&stops);
        assert_eq!(s.push("héllo <"), ("héllo ".into(), false));
        assert_eq!(s.push("b>"), ("<b>".into(), false));
    }
}
