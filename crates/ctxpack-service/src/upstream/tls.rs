//! TLS to an upstream: its roots (a `ca-file`, or the system's) and a
//! client certificate for mTLS, checked when the settings are read.

use super::UpstreamError;

/// TLS to an upstream, as PEM.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Tls {
    /// The roots its certificate is checked against; the system's when
    /// none.
    pub ca: Option<Vec<u8>>,
    /// A client certificate and its key, for mTLS.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("Tls")
            .field("ca", &self.ca.as_ref().map(Vec::len))
            .field("identity", &self.identity.is_some())
            .finish()
    }
}

impl Tls {
    /// A client configuration's builder (ring, the safe protocol versions).
    fn builder()
    -> Result<rustls::ConfigBuilder<rustls::ClientConfig, rustls::WantsVerifier>, UpstreamError>
    {
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(UpstreamError::Tls)
    }

    /// The configuration a plain `http://` connector carries unused.
    pub(super) fn plain_config() -> Result<rustls::ClientConfig, UpstreamError> {
        Ok(Tls::builder()?
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth())
    }

    /// Checks that each file is what its key says, naming the key.
    pub fn check(&self) -> Result<(), (&'static str, UpstreamError)> {
        if let Some(ca) = &self.ca {
            roots_of(Some(ca)).map_err(|e| ("ca-file", e))?;
        }
        if let Some((cert, key)) = &self.identity {
            certificates(cert).map_err(|e| ("cert-file", e))?;
            private_key(key).map_err(|e| ("key-file", e))?;
        }
        Ok(())
    }

    /// The rustls client configuration (ring), for HTTPS.
    pub(super) fn client_config(&self) -> Result<rustls::ClientConfig, UpstreamError> {
        let builder = Tls::builder()?.with_root_certificates(roots_of(self.ca.as_deref())?);
        match &self.identity {
            Some((cert, key)) => builder
                .with_client_auth_cert(certificates(cert)?, private_key(key)?)
                .map_err(UpstreamError::Tls),
            None => Ok(builder.with_no_client_auth()),
        }
    }
}

/// The certificates of a PEM file: at least one.
fn certificates(
    pem: &[u8],
) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>, UpstreamError> {
    use rustls::pki_types::pem::PemObject;
    let certs = rustls::pki_types::CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(UpstreamError::NotPemCertificates)?;
    if certs.is_empty() {
        return Err(UpstreamError::NoCertificate);
    }
    Ok(certs)
}

/// The private key of a PEM file.
fn private_key(pem: &[u8]) -> Result<rustls::pki_types::PrivateKeyDer<'static>, UpstreamError> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::PrivateKeyDer::from_pem_slice(pem).map_err(UpstreamError::NotPemKey)
}

/// `ca`'s certificates, or the system's roots.
fn roots_of(ca: Option<&[u8]>) -> Result<rustls::RootCertStore, UpstreamError> {
    let mut roots = rustls::RootCertStore::empty();
    match ca {
        Some(pem) => {
            for c in certificates(pem)? {
                roots.add(c).map_err(UpstreamError::NotCa)?;
            }
        }
        None => {
            for c in rustls_native_certs::load_native_certs().certs {
                // A system root rustls cannot read is one fewer root.
                let _ = roots.add(c);
            }
        }
    }
    Ok(roots)
}
