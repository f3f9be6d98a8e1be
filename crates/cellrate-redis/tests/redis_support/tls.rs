//! TLS for the tests: a CA, a server certificate for 127.0.0.1 and a client certificate, made
//! with `openssl` at test time (nothing is committed), and redis-servers that listen with them.

use crate::redis_support::{free_port, RedisServer};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Certificates in a directory of their own, removed when dropped.
pub struct Certs {
    pub dir: PathBuf,
}

impl Certs {
    /// A fresh CA (`ca.crt`), a server certificate for IP 127.0.0.1 (`server.crt`,
    /// `server.key`) and a client one (`client.crt`, `client.key`), all signed by the CA; `None`
    /// with a skip notice where `openssl` is missing. `name` keeps the directories apart.
    pub fn make(test: &str, name: &str) -> Option<Certs> {
        let found = Command::new("openssl")
            .arg("version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: no openssl on PATH");
            return None;
        }
        let dir = std::env::temp_dir().join(format!(
            "cellrate-tls-{}-{name}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let certs = Certs { dir };
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        certs.openssl(
            &[
                &["req", "-x509"],
                &ec[..],
                &["-keyout", "ca.key", "-out", "ca.crt"],
            ]
            .concat(),
            &["-days", "2", "-subj", "/CN=cellrate test CA"],
        );
        std::fs::write(
            certs.dir.join("server.ext"),
            "subjectAltName=IP:127.0.0.1\n",
        )
        .unwrap();
        std::fs::write(
            certs.dir.join("client.ext"),
            "extendedKeyUsage=clientAuth\n",
        )
        .unwrap();
        for who in ["server", "client"] {
            let (key, csr, crt, ext) = (
                format!("{who}.key"),
                format!("{who}.csr"),
                format!("{who}.crt"),
                format!("{who}.ext"),
            );
            certs.openssl(
                &[&["req"], &ec[..], &["-keyout", &key, "-out", &csr]].concat(),
                &["-subj", &format!("/CN=cellrate test {who}")],
            );
            certs.openssl(
                &[
                    "x509", "-req", "-in", &csr, "-CA", "ca.crt", "-CAkey", "ca.key",
                ],
                &[
                    "-CAcreateserial",
                    "-out",
                    &crt,
                    "-days",
                    "2",
                    "-extfile",
                    &ext,
                ],
            );
        }
        Some(certs)
    }

    fn openssl(&self, args: &[&str], more: &[&str]) {
        let out = Command::new("openssl")
            .args(args)
            .args(more)
            .current_dir(&self.dir)
            .output()
            .expect("run openssl");
        assert!(out.status.success(), "openssl {args:?}: {out:?}");
    }

    pub fn path(&self, file: &str) -> String {
        self.dir.join(file).display().to_string()
    }

    pub fn read(&self, file: &str) -> Vec<u8> {
        std::fs::read(self.dir.join(file)).unwrap()
    }

    /// The redis-server arguments of a TLS port `port` with these certificates; clients must
    /// present a certificate when `clients` is set.
    pub fn server_args(&self, port: u16, clients: bool) -> Vec<String> {
        let auth = if clients { "yes" } else { "no" };
        [
            "--tls-port",
            &port.to_string(),
            "--tls-cert-file",
            &self.path("server.crt"),
            "--tls-key-file",
            &self.path("server.key"),
            "--tls-ca-cert-file",
            &self.path("ca.crt"),
            "--tls-auth-clients",
            auth,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }
}

impl Drop for Certs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A server with a plain port (for the test's own commands) and a TLS port; `None` with a skip
/// notice where it cannot start (no redis-server, or one built without TLS).
pub fn tls_server(test: &str, certs: &Certs, clients: bool) -> Option<(RedisServer, u16)> {
    let tls_port = free_port();
    let args = certs.server_args(tls_port, clients);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = RedisServer::start_with(test, &args)?;
    Some((server, tls_port))
}

/// `rediss://127.0.0.1:PORT`.
pub fn url(port: u16) -> String {
    format!("rediss://127.0.0.1:{port}")
}
