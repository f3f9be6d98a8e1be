//! Replies, written into a connection's output buffer in the protocol it speaks: RESP2, or
//! RESP3 after `HELLO 3` (where maps and the null have types of their own).

/// A connection's pending replies.
#[derive(Debug, Default)]
pub(crate) struct Out {
    pub buf: Vec<u8>,
    /// RESP3 (after `HELLO 3`).
    pub resp3: bool,
}

impl Out {
    /// `+text`: a status (text without CR or LF).
    pub fn simple(&mut self, text: &str) {
        self.buf.push(b'+');
        self.buf.extend_from_slice(text.as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `-text`: an error, its first word the code (`ERR`, `NOAUTH`, ...). A CR or LF in it
    /// becomes a space, as Redis does, so that a reply stays one line.
    pub fn error(&mut self, text: &str) {
        self.buf.push(b'-');
        self.buf.extend(
            text.bytes()
                .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `:n`.
    pub fn integer(&mut self, n: i64) {
        self.buf.push(b':');
        decimal(&mut self.buf, n);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `$len` and the bytes.
    pub fn bulk(&mut self, bytes: &[u8]) {
        self.buf.push(b'$');
        decimal(&mut self.buf, bytes.len() as i64);
        self.buf.extend_from_slice(b"\r\n");
        self.buf.extend_from_slice(bytes);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// The null: `$-1` in RESP2, `_` in RESP3.
    pub fn null(&mut self) {
        if self.resp3 {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"$-1\r\n");
        }
    }

    /// The header of an array of `n` elements.
    pub fn array(&mut self, n: usize) {
        self.buf.push(b'*');
        decimal(&mut self.buf, n as i64);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// The header of a map of `n` pairs: a map in RESP3, an array of `2n` in RESP2.
    pub fn map(&mut self, n: usize) {
        if self.resp3 {
            self.buf.push(b'%');
            decimal(&mut self.buf, n as i64);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.array(2 * n);
        }
    }

    /// An array of integers.
    pub fn integers(&mut self, values: &[i64]) {
        self.array(values.len());
        for &v in values {
            self.integer(v);
        }
    }
}

/// `n` in decimal, without `fmt`: replies are written on every command.
fn decimal(out: &mut Vec<u8>, n: i64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = n.unsigned_abs();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings() {
        let mut out = Out::default();
        out.integers(&[0, 16, -1, i64::MIN, i64::MAX]);
        out.error("ERR a\r\nb");
        out.null();
        out.map(1);
        assert_eq!(
            String::from_utf8(out.buf).unwrap(),
            "*5\r\n:0\r\n:16\r\n:-1\r\n:-9223372036854775808\r\n:9223372036854775807\r\n\
             -ERR a  b\r\n$-1\r\n*2\r\n"
        );
        let mut out = Out {
            resp3: true,
            ..Out::default()
        };
        out.null();
        out.map(2);
        assert_eq!(out.buf, b"_\r\n%2\r\n");
    }
}
