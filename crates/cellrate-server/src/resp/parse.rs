//! Commands read from a connection's bytes: RESP arrays of bulk strings (what every client
//! sends) and inline commands (a line of words, what a person types into `nc`).
//!
//! The parser resumes where it stopped when more bytes come, so a command trickling in byte by
//! byte is read once, not again from its start on every arrival; and every bound is checked
//! as soon as the header that states it arrives: an array of more than `max_args` arguments,
//! or a bulk string that would make the command longer than `max_bytes`, is refused before
//! any of it is buffered. Nothing nests: an array's elements must be bulk strings, as Redis
//! requires of a request. A refusal carries Redis's own protocol error text; the connection
//! answers it and closes, as Redis does, since what follows cannot be framed.

use std::fmt;

/// The bounds of one command.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// The most bytes of a command, its framing included.
    pub max_bytes: usize,
    /// The most arguments of a command, its name included.
    pub max_args: usize,
}

/// Input that is not a command within the limits: the reason, in Redis's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ProtocolError(pub &'static str);

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ERR Protocol error: {}", self.0)
    }
}

/// The longest header line (`*N` or `$N`): a sign and 19 digits, with room to spare.
const MAX_HEADER: usize = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Between commands.
    Start,
    /// In an array, `left` bulk strings to go.
    Args { left: usize },
    /// In an inline command whose line has no newline yet.
    Inline,
}

/// The arguments of one command: ranges of the connection's buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Args<'a> {
    buf: &'a [u8],
    ranges: &'a [(usize, usize)],
}

impl<'a> Args<'a> {
    /// How many arguments (the command's name included).
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Argument `i` (0: the name).
    pub fn get(&self, i: usize) -> &'a [u8] {
        let (from, to) = self.ranges[i];
        &self.buf[from..to]
    }
}

/// An incremental parser over a buffer that grows at its end (module docs).
#[derive(Debug)]
pub(crate) struct Parser {
    state: State,
    /// Where the command being read starts.
    start: usize,
    /// Where reading resumes.
    pos: usize,
    /// The arguments of the command being read.
    ranges: Vec<(usize, usize)>,
}

impl Default for Parser {
    fn default() -> Parser {
        Parser {
            state: State::Start,
            start: 0,
            pos: 0,
            ranges: Vec::new(),
        }
    }
}

impl Parser {
    /// The next whole command of `buf`, from where the last one ended; `Ok(None)` while more
    /// bytes are needed. A command of no arguments (`*0`, an empty line) is one Redis ignores.
    pub fn next<'a>(
        &'a mut self,
        buf: &'a [u8],
        limits: &Limits,
    ) -> Result<Option<Args<'a>>, ProtocolError> {
        loop {
            match self.state {
                State::Start => {
                    let Some(&first) = buf.get(self.pos) else {
                        return Ok(None);
                    };
                    self.start = self.pos;
                    self.ranges.clear();
                    if first != b'*' {
                        self.state = State::Inline;
                        continue;
                    }
                    let Some((count, after)) = header(buf, self.pos + 1, "mbulk count")? else {
                        return Ok(None);
                    };
                    self.pos = after;
                    if count <= 0 {
                        return Ok(Some(self.finish(buf)));
                    }
                    let count = usize::try_from(count).unwrap_or(usize::MAX);
                    if count > limits.max_args {
                        return Err(ProtocolError("invalid multibulk length"));
                    }
                    self.ranges.reserve(count);
                    self.state = State::Args { left: count };
                }
                State::Args { left } => {
                    if left == 0 {
                        return Ok(Some(self.finish(buf)));
                    }
                    let Some(&kind) = buf.get(self.pos) else {
                        return Ok(None);
                    };
                    if kind != b'$' {
                        return Err(ProtocolError("expected '$'"));
                    }
                    let Some((len, data)) = header(buf, self.pos + 1, "bulk count")? else {
                        return Ok(None);
                    };
                    let len = usize::try_from(len)
                        .ok()
                        .filter(|&len| len <= limits.max_bytes)
                        .ok_or(ProtocolError("invalid bulk length"))?;
                    let end = data + len;
                    if end + 2 - self.start > limits.max_bytes {
                        return Err(ProtocolError("command too large"));
                    }
                    if buf.len() < end + 2 {
                        return Ok(None);
                    }
                    if &buf[end..end + 2] != b"\r\n" {
                        return Err(ProtocolError("bulk string not followed by CRLF"));
                    }
                    self.ranges.push((data, end));
                    self.pos = end + 2;
                    self.state = State::Args { left: left - 1 };
                }
                State::Inline => {
                    let from = self.pos.max(self.start);
                    let Some(newline) = buf[from..].iter().position(|&b| b == b'\n') else {
                        self.pos = buf.len();
                        if buf.len() - self.start > limits.max_bytes {
                            return Err(ProtocolError("too big inline request"));
                        }
                        return Ok(None);
                    };
                    let end = from + newline;
                    if end - self.start > limits.max_bytes {
                        return Err(ProtocolError("too big inline request"));
                    }
                    let line_end = if end > self.start && buf[end - 1] == b'\r' {
                        end - 1
                    } else {
                        end
                    };
                    let mut i = self.start;
                    while i < line_end {
                        while i < line_end && matches!(buf[i], b' ' | b'\t') {
                            i += 1;
                        }
                        let word = i;
                        while i < line_end && !matches!(buf[i], b' ' | b'\t') {
                            i += 1;
                        }
                        if i > word {
                            if self.ranges.len() == limits.max_args {
                                return Err(ProtocolError("invalid multibulk length"));
                            }
                            self.ranges.push((word, i));
                        }
                    }
                    self.pos = end + 1;
                    return Ok(Some(self.finish(buf)));
                }
            }
        }
    }

    /// The command just read, the parser ready for the next.
    fn finish<'a>(&'a mut self, buf: &'a [u8]) -> Args<'a> {
        self.state = State::Start;
        self.start = self.pos;
        Args {
            buf,
            ranges: &self.ranges,
        }
    }

    /// The bytes read as whole commands, which the buffer may drop: call
    /// [`dropped`](Self::dropped) after dropping them.
    pub fn consumed(&self) -> usize {
        self.start
    }

    /// Whether part of a command has been read.
    pub fn in_command(&self, buf: &[u8]) -> bool {
        buf.len() > self.start
    }

    /// The buffer dropped its first `n` bytes (at most [`consumed`](Self::consumed)).
    pub fn dropped(&mut self, n: usize) {
        if self.state == State::Start {
            // The last command's arguments, already run.
            self.ranges.clear();
        }
        self.start -= n;
        self.pos -= n;
        for (from, to) in &mut self.ranges {
            *from -= n;
            *to -= n;
        }
    }
}

/// The integer of a header line starting at `from` (after its `*` or `$`), and where the line
/// ends; `None` while the line is not whole.
fn header(
    buf: &[u8],
    from: usize,
    what: &'static str,
) -> Result<Option<(i64, usize)>, ProtocolError> {
    let rest = &buf[from.min(buf.len())..];
    let window = &rest[..rest.len().min(MAX_HEADER)];
    let Some(cr) = window.iter().position(|&b| b == b'\r') else {
        if rest.len() >= MAX_HEADER {
            return Err(ProtocolError(too_big(what)));
        }
        return Ok(None);
    };
    let Some(&lf) = rest.get(cr + 1) else {
        return Ok(None);
    };
    let n = std::str::from_utf8(&window[..cr])
        .ok()
        .filter(|s| !s.starts_with('+'))
        .and_then(|s| s.parse::<i64>().ok());
    match (n, lf) {
        (Some(n), b'\n') => Ok(Some((n, from + cr + 2))),
        _ if what == "bulk count" => Err(ProtocolError("invalid bulk length")),
        _ => Err(ProtocolError("invalid multibulk length")),
    }
}

fn too_big(what: &'static str) -> &'static str {
    if what == "bulk count" {
        "too big bulk count string"
    } else {
        "too big mbulk count string"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_bytes: 1024,
        max_args: 16,
    };

    /// Every command of `input` fed `step` bytes at a time, as lists of arguments, and the
    /// error that ended it if any.
    fn feed(input: &[u8], step: usize) -> (Vec<Vec<Vec<u8>>>, Option<ProtocolError>) {
        let mut parser = Parser::default();
        let mut buf = Vec::new();
        let mut commands = Vec::new();
        for chunk in input.chunks(step.max(1)) {
            buf.extend_from_slice(chunk);
            loop {
                match parser.next(&buf, &LIMITS) {
                    Ok(Some(args)) => {
                        commands.push((0..args.len()).map(|i| args.get(i).to_vec()).collect());
                    }
                    Ok(None) => break,
                    Err(e) => return (commands, Some(e)),
                }
            }
            let n = parser.consumed();
            buf.drain(..n);
            parser.dropped(n);
        }
        (commands, None)
    }

    fn words(list: &[&str]) -> Vec<Vec<u8>> {
        list.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn arrays_inline_and_empty_commands_at_any_split() {
        let input = b"*2\r\n$4\r\nECHO\r\n$5\r\nhi\r\nx\r\n*0\r\nPING  a\tb\r\n\r\n*1\r\n$4\r\nPING\r\nQUIT\n";
        for step in 1..=input.len() {
            let (commands, error) = feed(input, step);
            assert_eq!(error, None, "step {step}");
            let want = vec![
                words(&["ECHO", "hi\r\nx"]),
                vec![],
                words(&["PING", "a", "b"]),
                vec![],
                words(&["PING"]),
                words(&["QUIT"]),
            ];
            assert_eq!(commands, want, "step {step}");
        }
    }

    #[test]
    fn bounds_are_checked_at_the_header() {
        let cases: [(&[u8], &str); 9] = [
            (b"*17\r\n", "invalid multibulk length"),
            (b"*1\r\n$1099511627776\r\n", "invalid bulk length"),
            (b"*1\r\n$-1\r\n", "invalid bulk length"),
            (b"*2\r\n$1020\r\n", "command too large"),
            (b"*1\r\n*1\r\n", "expected '$'"),
            (b"*1\r\n$1\r\nab\r\n", "bulk string not followed by CRLF"),
            (b"*x\r\n", "invalid multibulk length"),
            (
                b"*11111111111111111111111111111111111",
                "too big mbulk count string",
            ),
            (b"*1\r\n$+1\r\n", "invalid bulk length"),
        ];
        for (input, error) in cases {
            let (_, got) = feed(input, input.len());
            assert_eq!(
                got,
                Some(ProtocolError(error)),
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
        let (_, got) = feed(&[b'a'; 2000], 100);
        assert_eq!(got, Some(ProtocolError("too big inline request")));
    }

    /// Random and truncated frames: never a panic, never a command beyond the limits, and a
    /// frame cut short is waited for, not misread.
    #[test]
    fn random_and_truncated_frames() {
        let mut rng = fastrand::Rng::with_seed(0x5eed);
        let pieces: [&[u8]; 14] = [
            b"*",
            b"$",
            b"\r\n",
            b"\r",
            b"\n",
            b"1",
            b"3",
            b"-1",
            b"0",
            b"CL.THROTTLE",
            b"k",
            b"99999999999999999999",
            b" ",
            b"\x00\xff",
        ];
        for _ in 0..20_000 {
            let mut input = Vec::new();
            for _ in 0..rng.usize(1..40) {
                if rng.bool() {
                    input.extend_from_slice(pieces[rng.usize(..pieces.len())]);
                } else {
                    input.push(rng.u8(..));
                }
            }
            let step = rng.usize(1..=input.len());
            let (commands, _) = feed(&input, step);
            for command in &commands {
                assert!(command.len() <= LIMITS.max_args);
                assert!(command.iter().map(Vec::len).sum::<usize>() <= LIMITS.max_bytes);
            }
            // The same input in one piece reads the same commands.
            let (whole, _) = feed(&input, input.len());
            assert_eq!(commands, whole);
        }
        // Well-formed commands cut anywhere: nothing until the whole command is there.
        for _ in 0..2_000 {
            let argc = rng.usize(1..6);
            let args: Vec<Vec<u8>> = (0..argc)
                .map(|_| (0..rng.usize(0..20)).map(|_| rng.u8(..)).collect())
                .collect();
            let mut frame = format!("*{argc}\r\n").into_bytes();
            for arg in &args {
                frame.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
                frame.extend_from_slice(arg);
                frame.extend_from_slice(b"\r\n");
            }
            let cut = rng.usize(0..frame.len());
            assert_eq!(feed(&frame[..cut], 1), (vec![], None));
            assert_eq!(feed(&frame, rng.usize(1..=frame.len())), (vec![args], None));
        }
    }
}
