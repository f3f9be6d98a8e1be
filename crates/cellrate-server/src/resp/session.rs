//! The commands about the connection itself, as clients send them on connecting: `AUTH`,
//! `HELLO` (RESP2 or RESP3, with `AUTH` and `SETNAME`), `CLIENT` (`SETNAME`, `GETNAME`,
//! `SETINFO`, `ID`, `INFO`, `LIST`, `NO-EVICT`, `NO-TOUCH`), `SELECT 0` and `RESET`. Replies
//! and errors are Redis 7's.

use super::introspection::{unknown_subcommand, Spec};
use super::parse::Args;
use super::reply::Out;
use super::{Context, Session, REDIS_VERSION};
use crate::throttle::counts::ThrottleCounts;

/// Runs `spec`, one of this file's commands.
pub(crate) fn run(
    ctx: &Context,
    session: &mut Session,
    spec: &Spec,
    args: Args<'_>,
    out: &mut Out,
) {
    match spec.name {
        "auth" => auth(ctx, session, args, out),
        "hello" => hello(ctx, session, args, out),
        "client" => client(session, args, out),
        "select" => select(args.get(1), out),
        "reset" => {
            session.authenticated = ctx.password.is_none();
            session.name = None;
            out.resp3 = false;
            out.simple("RESET");
        }
        _ => unknown_subcommand(spec.name, b"", out),
    }
}

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// Checks `user` (the only one is `default`) and `password`: `Err` is the error to answer.
fn check(
    ctx: &Context,
    session: &mut Session,
    user: &[u8],
    password: &[u8],
) -> Result<(), &'static str> {
    let Some(expected) = &ctx.password else {
        // Redis's default user without a password takes any password given with its name.
        return if user == b"default" {
            session.authenticated = true;
            Ok(())
        } else {
            Err(WRONGPASS)
        };
    };
    if user == b"default" && expected.matches(password) {
        session.authenticated = true;
        Ok(())
    } else {
        ThrottleCounts::add(&ctx.server.globals().throttle.auth_failures);
        Err(WRONGPASS)
    }
}

/// `AUTH password` or `AUTH username password`.
fn auth(ctx: &Context, session: &mut Session, args: Args<'_>, out: &mut Out) {
    let result = match args.len() {
        2 if ctx.password.is_none() => Err(
            "ERR AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?",
        ),
        2 => check(ctx, session, b"default", args.get(1)),
        3 => check(ctx, session, args.get(1), args.get(2)),
        _ => Err("ERR syntax error"),
    };
    match result {
        Ok(()) => out.simple("OK"),
        Err(e) => out.error(e),
    }
}

/// `HELLO [protover [AUTH username password] [SETNAME clientname]]`.
fn hello(ctx: &Context, session: &mut Session, args: Args<'_>, out: &mut Out) {
    let mut resp3 = out.resp3;
    if args.len() >= 2 {
        match std::str::from_utf8(args.get(1))
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
        {
            Some(2) => resp3 = false,
            Some(3) => resp3 = true,
            Some(_) => return out.error("NOPROTO unsupported protocol version"),
            None => {
                return out.error("ERR Protocol version is not an integer or out of range");
            }
        }
    }
    let mut name = None;
    let mut i = 2;
    while i < args.len() {
        let option = args.get(i);
        let more = args.len() - i - 1;
        if option.eq_ignore_ascii_case(b"AUTH") && more >= 2 {
            if let Err(e) = check(ctx, session, args.get(i + 1), args.get(i + 2)) {
                return out.error(e);
            }
            i += 3;
        } else if option.eq_ignore_ascii_case(b"SETNAME") && more >= 1 {
            let given = args.get(i + 1);
            if let Err(e) = valid_name(given) {
                return out.error(e);
            }
            name = Some(given.to_vec());
            i += 2;
        } else {
            let option = String::from_utf8_lossy(&option[..option.len().min(128)]).into_owned();
            return out.error(&format!("ERR Syntax error in HELLO option '{option}'"));
        }
    }
    if !session.authenticated {
        return out.error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
             HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and \
             select the RESP protocol version at the same time",
        );
    }
    if name.is_some() {
        session.name = name;
    }
    out.resp3 = resp3;
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(REDIS_VERSION.as_bytes());
    out.bulk(b"proto");
    out.integer(if resp3 { 3 } else { 2 });
    out.bulk(b"id");
    out.integer(session.id as i64);
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
}

/// A client name: visible ASCII, no spaces (Redis's rule).
fn valid_name(name: &[u8]) -> Result<(), &'static str> {
    if name.iter().all(|&b| (b'!'..=b'~').contains(&b)) {
        Ok(())
    } else {
        Err("ERR Client names cannot contain spaces, newlines or special characters.")
    }
}

/// `CLIENT subcommand ...`.
fn client(session: &mut Session, args: Args<'_>, out: &mut Out) {
    let sub = args.get(1);
    let is = |name: &str| sub.eq_ignore_ascii_case(name.as_bytes());
    let argc = args.len();
    let arity = |name: &str, out: &mut Out| {
        super::command::wrong_arity(&format!("client|{name}"), out);
    };
    if is("SETNAME") {
        if argc != 3 {
            return arity("setname", out);
        }
        match valid_name(args.get(2)) {
            Ok(()) => {
                let name = args.get(2);
                session.name = (!name.is_empty()).then(|| name.to_vec());
                out.simple("OK");
            }
            Err(e) => out.error(e),
        }
    } else if is("GETNAME") {
        match &session.name {
            Some(name) => out.bulk(name),
            None => out.null(),
        }
    } else if is("ID") {
        out.integer(session.id as i64);
    } else if is("SETINFO") {
        if argc != 4 {
            return arity("setinfo", out);
        }
        let (attr, value) = (args.get(2), args.get(3));
        if value.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
            return out.error(
                "ERR lib-name and lib-ver cannot contain spaces, newlines or special characters.",
            );
        }
        if attr.eq_ignore_ascii_case(b"LIB-NAME") {
            session.library.0 = Some(value.to_vec());
        } else if attr.eq_ignore_ascii_case(b"LIB-VER") {
            session.library.1 = Some(value.to_vec());
        } else {
            let attr = String::from_utf8_lossy(&attr[..attr.len().min(128)]).into_owned();
            return out.error(&format!("ERR Unrecognized option '{attr}'"));
        }
        out.simple("OK");
    } else if is("INFO") || is("LIST") {
        let text = describe(session, out.resp3);
        out.bulk(text.as_bytes());
    } else if is("NO-EVICT") || is("NO-TOUCH") {
        out.simple("OK");
    } else {
        unknown_subcommand("CLIENT", sub, out);
    }
}

/// A connection as `CLIENT INFO` describes it (the fields that mean something here).
fn describe(session: &Session, resp3: bool) -> String {
    let text = |v: &Option<Vec<u8>>| {
        v.as_deref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    format!(
        "id={} addr={} name={} db=0 resp={} lib-name={} lib-ver={}\n",
        session.id,
        session.peer,
        text(&session.name),
        if resp3 { 3 } else { 2 },
        text(&session.library.0),
        text(&session.library.1),
    )
}

/// `SELECT index`: database 0 is the only one.
fn select(index: &[u8], out: &mut Out) {
    match std::str::from_utf8(index)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
    {
        Some(0) => out.simple("OK"),
        Some(_) => out.error("ERR DB index is out of range"),
        None => out.error("ERR value is not an integer or out of range"),
    }
}
