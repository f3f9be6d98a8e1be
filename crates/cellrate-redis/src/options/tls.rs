//! The TLS settings of `rediss://` connections: the roots a server must chain to, and the
//! client's own certificate.

use super::RedisOptions;

impl RedisOptions {
    /// `rediss://` servers must present a certificate chaining to one of these (PEM, one or
    /// more), instead of to the system's roots: a private CA, or a managed service's. The
    /// server's name (or IP address) in the URL must match the certificate.
    pub fn tls_root_certificates(mut self, pem: impl Into<Vec<u8>>) -> RedisOptions {
        self.tls_root_certificates = Some(pem.into().into());
        self
    }

    /// The certificate chain and private key (PEM) to present to `rediss://` servers that ask
    /// for one (mutual TLS, `tls-auth-clients yes`).
    pub fn tls_client_identity(
        mut self,
        certificate_chain_pem: impl Into<Vec<u8>>,
        key_pem: impl Into<Vec<u8>>,
    ) -> RedisOptions {
        let identity = (certificate_chain_pem.into().into(), key_pem.into().into());
        self.tls_client_identity = Some(identity);
        self
    }

    /// The redis client's form of the TLS settings, if any differs from the defaults.
    pub(crate) fn tls_certificates(&self) -> Option<redis::TlsCertificates> {
        if self.tls_root_certificates.is_none() && self.tls_client_identity.is_none() {
            return None;
        }
        Some(redis::TlsCertificates {
            client_tls: self.tls_client_identity.as_ref().map(|(cert, key)| {
                redis::ClientTlsConfig {
                    client_cert: cert.to_vec(),
                    client_key: key.to_vec(),
                }
            }),
            root_cert: self.tls_root_certificates.as_ref().map(|pem| pem.to_vec()),
        })
    }
}
