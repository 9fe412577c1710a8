//! Line-at-a-time sanitizing for streams (`cdp-relay sanitize` on a log file).
//!
//! Most rules live within one line; a PEM private key does not. [`LineSanitizer`] remembers
//! that it is inside a key block, so the base64 lines after `-----BEGIN … PRIVATE KEY-----` are
//! swallowed up to the `-----END …-----` line. It also knows where an over-long line can be cut
//! without leaving half a secret behind. Pure: the caller does the reading and writing.

use crate::{SafeText, Sanitizer};

/// Sanitizes a stream one line at a time; see [`Sanitizer::lines`].
#[derive(Debug)]
pub struct LineSanitizer<'s> {
    sanitizer: &'s Sanitizer,
    in_private_key: bool,
}

impl<'s> LineSanitizer<'s> {
    pub(crate) fn new(sanitizer: &'s Sanitizer) -> Self {
        LineSanitizer {
            sanitizer,
            in_private_key: false,
        }
    }

    /// Sanitizes one line (without its terminator). `None` when the line is swallowed because it
    /// is the inside of a private key block whose header was already replaced by a marker.
    pub fn line(&mut self, line: &str) -> Option<SafeText> {
        if self.in_private_key {
            let end = line
                .find("-----END ")
                .filter(|&i| line[i..].contains("-----"))?;
            self.in_private_key = false;
            let after = line[end + "-----END ".len()..]
                .find("-----")
                .map_or(line.len(), |i| end + "-----END ".len() + i + "-----".len());
            let rest = &line[after..];
            return (!rest.trim().is_empty()).then(|| self.sanitizer.text_capped(rest, usize::MAX));
        }
        if let Some(begin) = line.find("-----BEGIN ") {
            let header = &line[begin..];
            if header.contains("PRIVATE KEY") && !header.contains("-----END ") {
                self.in_private_key = true;
            }
        }
        Some(self.sanitizer.text_capped(line, usize::MAX))
    }

    /// Where to cut the first `prefix` bytes of a line that is too long to keep whole: at the
    /// last whitespace that leaves room for the longest registered secret, so neither a literal
    /// nor a token (JWT, key, id — none contain whitespace) straddles the cut. 0 when there is no
    /// such place (the whole prefix is dropped).
    pub fn safe_cut(&self, prefix: &str) -> usize {
        let room = prefix
            .len()
            .saturating_sub(self.sanitizer.longest_secret_len());
        let mut limit = room;
        while limit > 0 && !prefix.is_char_boundary(limit) {
            limit -= 1;
        }
        prefix[..limit].rfind(char::is_whitespace).map_or(0, |i| i)
    }
}

#[cfg(test)]
mod tests {
    use crate::Sanitizer;

    #[test]
    fn private_key_blocks_are_swallowed() {
        let s = Sanitizer::new();
        let mut lines = s.lines();
        let input = [
            "key follows",
            "-----BEGIN OPENSSH PRIVATE KEY-----",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
            "QyNTUxOQAAACDlF2pT3i0jT4s1bCkq0e8Dp6LcVYGz0U1y1XqV9CwK3gAAAJgQ1x7oENce",
            "-----END OPENSSH PRIVATE KEY----- trailing password=x",
            "after",
        ];
        let out: Vec<String> = input
            .iter()
            .filter_map(|l| lines.line(l))
            .map(|t| t.into_string())
            .collect();
        assert_eq!(
            out,
            [
                "key follows",
                "[redacted:private-key]",
                " trailing password=[redacted:password]",
                "after"
            ]
        );
    }

    #[test]
    fn one_line_keys_do_not_open_a_block() {
        let s = Sanitizer::new();
        let mut lines = s.lines();
        let one = "-----BEGIN EC PRIVATE KEY-----MHcCAQEE-----END EC PRIVATE KEY----- ok";
        assert_eq!(
            lines.line(one).map(|t| t.into_string()).as_deref(),
            Some("[redacted:private-key] ok")
        );
        assert_eq!(
            lines.line("next").map(|t| t.into_string()).as_deref(),
            Some("next")
        );
    }

    #[test]
    fn safe_cut_leaves_room_for_secrets() {
        let s = Sanitizer::new();
        assert_eq!(s.lines().safe_cut("abc def ghi"), 7);
        assert_eq!(s.lines().safe_cut("abcdefghi"), 0);
        s.register_secret("PW", "correct horse").expect("valid");
        // "def ghi" could be the head of a 13-character literal, 39 bytes percent-encoded: cut
        // before it.
        assert_eq!(s.lines().safe_cut("abc def ghi"), 0);
        let line = "a b c d e f g h i j k l m n o p q r s t u v w x y z";
        assert_eq!(line.len(), 51);
        assert_eq!(s.lines().safe_cut(line), 11);
    }
}
