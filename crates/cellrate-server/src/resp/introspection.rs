//! What the server says about itself: the commands it knows (`COMMAND`, with `COUNT`, `LIST`,
//! `INFO` and `DOCS`, which client libraries and `redis-cli` ask when they connect), a few
//! settings (`CONFIG GET`, which `redis-benchmark` asks), and `INFO`.

use super::parse::Args;
use super::reply::Out;
use super::{Context, REDIS_VERSION};
use std::fmt::Write;
use std::sync::atomic::Ordering;

/// A command this server knows: its name (lower case) and what `COMMAND` reports of it.
#[derive(Debug)]
pub(crate) struct Spec {
    pub name: &'static str,
    /// Redis's arity: the number of arguments with the name if positive, at least that many
    /// if negative.
    pub arity: i64,
    pub flags: &'static [&'static str],
    /// The first and last argument that is a key, and the step between.
    pub keys: (i64, i64, i64),
    pub group: &'static str,
    pub since: &'static str,
    pub summary: &'static str,
}

impl Spec {
    /// Whether a command of `argc` arguments (its name included) has this arity.
    pub fn takes(&self, argc: usize) -> bool {
        let argc = argc as i64;
        if self.arity >= 0 {
            argc == self.arity
        } else {
            argc >= -self.arity
        }
    }
}

const fn spec(
    name: &'static str,
    arity: i64,
    flags: &'static [&'static str],
    since: &'static str,
    summary: &'static str,
) -> Spec {
    Spec {
        name,
        arity,
        flags,
        keys: (0, 0, 0),
        group: "connection",
        since,
        summary,
    }
}

/// Every command (`cl.throttle` first: it is the one that matters). Its arity is -1 as for
/// every module command in Redis, so that redis-cell's usage text answers a wrong count.
pub(crate) const COMMANDS: [Spec; 12] = [
    Spec {
        name: "cl.throttle",
        arity: -1,
        flags: &["write"],
        keys: (1, 1, 1),
        group: "module",
        since: "0.1.0",
        summary: "Spends tokens from a key's GCRA bucket, or says when to retry (redis-cell).",
    },
    spec(
        "ping",
        -1,
        &["fast", "stale"],
        "1.0.0",
        "Answers PONG, or the message given.",
    ),
    spec(
        "echo",
        2,
        &["fast", "stale"],
        "1.0.0",
        "Answers the message given.",
    ),
    spec(
        "quit",
        -1,
        &["fast", "stale", "no_auth"],
        "1.0.0",
        "Closes the connection.",
    ),
    spec(
        "reset",
        1,
        &["fast", "stale", "no_auth"],
        "6.2.0",
        "Resets the connection's state.",
    ),
    spec(
        "hello",
        -1,
        &["fast", "stale", "no_auth"],
        "6.0.0",
        "Chooses the protocol (2 or 3), authenticates, names the connection.",
    ),
    spec(
        "auth",
        -2,
        &["fast", "stale", "no_auth"],
        "1.0.0",
        "Authenticates the connection.",
    ),
    spec(
        "client",
        -2,
        &["stale"],
        "2.4.0",
        "Names the connection and reads about it.",
    ),
    spec(
        "select",
        2,
        &["fast", "stale"],
        "1.0.0",
        "Selects database 0, the only one.",
    ),
    spec(
        "command",
        -1,
        &["stale"],
        "2.8.13",
        "Describes the commands of this server.",
    ),
    spec(
        "config",
        -2,
        &["stale"],
        "2.0.0",
        "Reads a few settings (GET).",
    ),
    spec("info", -1, &["stale"], "1.0.0", "Describes the server."),
];

/// The command named `name`, whatever its case.
pub(crate) fn find(name: &[u8]) -> Option<&'static Spec> {
    COMMANDS
        .iter()
        .find(|spec| spec.name.as_bytes().eq_ignore_ascii_case(name))
}

/// `ERR unknown subcommand 'SUB'. Try PARENT HELP.`
pub(crate) fn unknown_subcommand(parent: &str, sub: &[u8], out: &mut Out) {
    let sub = String::from_utf8_lossy(&sub[..sub.len().min(128)]).into_owned();
    out.error(&format!(
        "ERR unknown subcommand '{sub}'. Try {parent} HELP."
    ));
}

/// `COMMAND [COUNT | LIST | INFO name... | DOCS name...]`.
pub(crate) fn command(args: Args<'_>, out: &mut Out) {
    if args.len() == 1 {
        out.array(COMMANDS.len());
        for spec in &COMMANDS {
            describe(spec, out);
        }
        return;
    }
    let sub = args.get(1);
    let names = || (2..args.len()).map(|i| args.get(i));
    if sub.eq_ignore_ascii_case(b"COUNT") && args.len() == 2 {
        out.integer(COMMANDS.len() as i64);
    } else if sub.eq_ignore_ascii_case(b"LIST") && args.len() == 2 {
        out.array(COMMANDS.len());
        for spec in &COMMANDS {
            out.bulk(spec.name.as_bytes());
        }
    } else if sub.eq_ignore_ascii_case(b"INFO") {
        if args.len() == 2 {
            out.array(COMMANDS.len());
            COMMANDS.iter().for_each(|spec| describe(spec, out));
            return;
        }
        out.array(args.len() - 2);
        for name in names() {
            match find(name) {
                Some(spec) => describe(spec, out),
                None => out.null(),
            }
        }
    } else if sub.eq_ignore_ascii_case(b"DOCS") {
        let asked: Vec<&Spec> = if args.len() == 2 {
            COMMANDS.iter().collect()
        } else {
            names().filter_map(find).collect()
        };
        out.map(asked.len());
        for spec in asked {
            out.bulk(spec.name.as_bytes());
            let module = spec.group == "module";
            out.map(if module { 4 } else { 3 });
            for (field, value) in [
                ("summary", spec.summary),
                ("since", spec.since),
                ("group", spec.group),
            ] {
                out.bulk(field.as_bytes());
                out.bulk(value.as_bytes());
            }
            if module {
                out.bulk(b"module");
                out.bulk(b"redis-cell");
            }
        }
    } else {
        unknown_subcommand("COMMAND", sub, out);
    }
}

/// A command as `COMMAND INFO` describes it.
fn describe(spec: &Spec, out: &mut Out) {
    out.array(10);
    out.bulk(spec.name.as_bytes());
    out.integer(spec.arity);
    out.array(spec.flags.len());
    for flag in spec.flags {
        out.simple(flag);
    }
    out.integer(spec.keys.0);
    out.integer(spec.keys.1);
    out.integer(spec.keys.2);
    out.array(0); // ACL categories
    out.array(0); // tips
    out.array(0); // key specifications
    out.array(0); // subcommands
}

/// `CONFIG GET parameter...` (glob patterns as Redis takes them): the few settings clients
/// and tools ask for. Nothing can be set.
pub(crate) fn config(ctx: &Context, args: Args<'_>, out: &mut Out) {
    let sub = args.get(1);
    if !sub.eq_ignore_ascii_case(b"GET") {
        unknown_subcommand("CONFIG", sub, out);
        return;
    }
    if args.len() < 3 {
        super::command::wrong_arity("config|get", out);
        return;
    }
    let s = ctx.server.settings();
    let settings: [(&str, String); 6] = [
        ("appendonly", "no".to_owned()),
        ("databases", "1".to_owned()),
        ("maxclients", s.resp_max_connections.to_string()),
        ("port", ctx.port.to_string()),
        ("save", String::new()),
        ("timeout", s.resp_idle_secs.to_string()),
    ];
    let matched: Vec<&(&str, String)> = settings
        .iter()
        .filter(|(name, _)| (2..args.len()).any(|i| glob(args.get(i), name.as_bytes())))
        .collect();
    out.map(matched.len());
    for (name, value) in matched {
        out.bulk(name.as_bytes());
        out.bulk(value.as_bytes());
    }
}

/// Whether `text` matches `pattern` (`*` and `?`; case ignored, as Redis's config names).
/// Without recursion: a pattern is a client's, as long as a command.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    // The last star seen, and the text position it was last tried at.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || c.eq_ignore_ascii_case(&text[t]) => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    star = Some((sp, st + 1));
                    p = sp + 1;
                    t = st + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|&c| c == b'*')
}

/// `INFO`: the server, its clients, and the keys of the throttle table (as database 0's).
pub(crate) fn info(ctx: &Context, out: &mut Out) {
    let s = ctx.server.settings();
    let mut text = String::new();
    let _ = write!(
        text,
        "# Server\r\nredis_version:{REDIS_VERSION}\r\ncellrate_server_version:{}\r\n\
         redis_mode:standalone\r\nprocess_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\n\r\n\
         # Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\n",
        env!("CARGO_PKG_VERSION"),
        std::process::id(),
        ctx.port,
        ctx.started.elapsed().as_secs(),
        ctx.server
            .globals()
            .throttle
            .connections
            .load(Ordering::Relaxed),
        s.resp_max_connections,
    );
    if let Some(table) = ctx.server.store().throttles() {
        let keys = table.stats().keys;
        let _ = write!(
            text,
            "\r\n# Keyspace\r\ndb0:keys={keys},expires=0,avg_ttl=0\r\n"
        );
    }
    out.bulk(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob(b"*", b"save"));
        assert!(glob(b"SAVE", b"save"));
        assert!(glob(b"max*", b"maxclients"));
        assert!(glob(b"s?ve", b"save"));
        assert!(!glob(b"save?", b"save"));
        assert!(!glob(b"*a*a*a*a*a*a*a*b", b"appendonly"));
        assert!(glob(b"*p*d*", b"appendonly"));
        // A pattern as long as a command: no recursion, no stack to run out of.
        assert!(glob(&[b'*'; 100_000], b"save"));
    }
}
