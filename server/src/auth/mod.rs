//! Who is asking. Three modes (`--auth`):
//!
//! - `none`: one local user, `local`; the server refuses to start on a non-loopback address in
//!   this mode unless told `--insecure-no-auth`.
//! - `password`: local accounts (`glassbox users add NAME`), argon2id hashes, a session cookie
//!   whose token the database keeps only as a SHA-256; failed sign-ins are throttled.
//! - `proxy`: the user named by a header (`--proxy-user-header`) of a request from a trusted
//!   proxy address (`--trusted-proxies`), such as oauth2-proxy or Authelia in front.
//!
//! [`Auth::user_of`] is the one place a request becomes a [`User`]; the HTTP layer stores the
//! answer in the request, and every handler and server function reads it from there. Reading a
//! trace goes through [`Reader`], the one place a share link's token is honoured.

mod reader;
mod throttle;

use std::{net::IpAddr, time::Duration};

use argon2::{
    password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString},
    Argon2,
};
use axum::http::{header, HeaderMap, HeaderName};
use sha2::{Digest, Sha256};

use crate::{
    config::Config,
    error::{Error, Result},
    stamps::{now_rfc3339, now_unix_ms},
    store::{Store, StoredUser, LOCAL_OWNER},
};
pub use reader::Reader;
pub use throttle::Throttle;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "glassbox_session";

pub use crate::config::AuthMode;

/// A signed-in user: `id` owns their conversations and traces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub id: String,
    pub name: String,
}

impl User {
    pub fn local() -> Self {
        User {
            id: LOCAL_OWNER.to_owned(),
            name: LOCAL_OWNER.to_owned(),
        }
    }

    /// Whether this is the single user of `--auth none` (per-user limits do not apply).
    pub fn is_local(&self) -> bool {
        self.id == LOCAL_OWNER
    }
}

pub struct Auth {
    pub mode: AuthMode,
    store: Store,
    session_ttl: Duration,
    /// `Secure` on the cookie: the public URL is https.
    secure_cookie: bool,
    proxy_header: HeaderName,
    trusted_proxies: Vec<IpAddr>,
    /// Reverse proxies whose `X-Forwarded-For` is believed (`--real-ip-from`).
    real_ip_from: Vec<IpAddr>,
    throttle: Throttle,
}

impl Auth {
    pub fn new(config: &Config, store: Store) -> Result<Self, String> {
        let proxy_header = HeaderName::try_from(config.proxy_user_header.as_str())
            .map_err(|error| format!("--proxy-user-header: {error}"))?;
        Ok(Auth {
            mode: config.auth,
            store,
            session_ttl: Duration::from_secs(config.session_days.max(1) * 86_400),
            secure_cookie: config
                .public_url
                .as_deref()
                .is_some_and(|url| url.starts_with("https://")),
            proxy_header,
            trusted_proxies: config.trusted_proxies.clone(),
            real_ip_from: config.real_ip_from.clone(),
            throttle: Throttle::default(),
        })
    }

    /// The user a request comes from, or `None` when it carries no valid sign-in.
    pub async fn user_of(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> Result<Option<User>> {
        match self.mode {
            AuthMode::None => Ok(Some(User::local())),
            AuthMode::Proxy => Ok(self.proxy_user(headers, peer)),
            AuthMode::Password => {
                let Some(token) = session_token(headers) else {
                    return Ok(None);
                };
                let found = self
                    .store
                    .session_user(&token_hash(&token), &now_rfc3339())
                    .await?;
                Ok(found.map(|(id, name)| User { id, name }))
            }
        }
    }

    fn proxy_user(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> Option<User> {
        let trusted = peer.is_some_and(|peer| {
            let peer = peer.to_canonical();
            self.trusted_proxies
                .iter()
                .any(|proxy| proxy.to_canonical() == peer)
        });
        if !trusted {
            return None;
        }
        // Exactly one: a proxy that appends to the client's header would let the client choose.
        let mut values = headers.get_all(&self.proxy_header).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return None;
        };
        let name = value.to_str().ok()?.trim();
        (!name.is_empty() && name.len() <= 256).then(|| User {
            id: format!("proxy:{name}"),
            name: name.to_owned(),
        })
    }

    /// The client's address: the peer's, or, when the peer is one of `--real-ip-from`, the nearest
    /// address in `X-Forwarded-For` that is not (as nginx's `real_ip_recursive` reads it).
    pub fn client_address(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> Option<IpAddr> {
        let peer = peer?.to_canonical();
        let trusted = |address: &IpAddr| {
            self.real_ip_from
                .iter()
                .any(|proxy| proxy.to_canonical() == *address)
        };
        if !trusted(&peer) {
            return Some(peer);
        }
        let hops: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .collect();
        let mut client = peer;
        for hop in hops.iter().rev() {
            let Ok(hop) = hop.trim().parse::<IpAddr>() else {
                break;
            };
            client = hop.to_canonical();
            if !trusted(&client) {
                break;
            }
        }
        Some(client)
    }

    /// Checks a name and password; on success opens a session and answers its cookie. `client`
    /// is [`Auth::client_address`].
    pub async fn sign_in(
        &self,
        name: &str,
        password: &str,
        client: Option<IpAddr>,
    ) -> Result<String> {
        if self.mode != AuthMode::Password {
            return Err(Error::Conflict(
                "this server does not use passwords (--auth)".into(),
            ));
        }
        // No account has a longer name (`add_user`); such a name is not kept in the throttle's
        // table either, where it would take memory.
        if name.len() > MAX_NAME_BYTES {
            return Err(Error::Unauthenticated("wrong name or password".into()));
        }
        let attempt = self.throttle.begin(name, client)?;
        let user = self.store.user_by_name(name).await?;
        let verified = match &user {
            Some(user) => verify_password(password, &user.password_hash).await,
            // The same work for an unknown name, so timing does not tell which names exist.
            None => {
                let _ = verify_password(password, DUMMY_HASH).await;
                false
            }
        };
        // A failure keeps the attempt counted (it was counted before the check).
        let Some(user) = user.filter(|_| verified) else {
            return Err(Error::Unauthenticated("wrong name or password".into()));
        };
        attempt.succeeded();
        let token = random_token()?;
        let expires = now_unix_ms() + self.session_ttl.as_millis() as i64;
        self.store
            .create_session(
                token_hash(&token),
                user.user_id,
                now_rfc3339(),
                app::protocol::format_rfc3339_millis(expires),
            )
            .await?;
        Ok(self.cookie(&token, self.session_ttl.as_secs()))
    }

    /// Ends the request's session (if any) and answers the cookie that clears it.
    pub async fn sign_out(&self, headers: &HeaderMap) -> Result<String> {
        if let Some(token) = session_token(headers) {
            self.store.delete_session(token_hash(&token)).await?;
        }
        Ok(self.cookie("", 0))
    }

    fn cookie(&self, token: &str, max_age: u64) -> String {
        let secure = if self.secure_cookie { "; Secure" } else { "" };
        format!(
            "{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}"
        )
    }
}

/// A valid argon2id hash of a random password, checked against when the name is unknown.
const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$0X9oOAnwK3aY7u0J9gBd3e0r9K3oUq5wWw8hDq1vW7s";

/// An argon2id hash (the crate's defaults: 19 MiB, 2 passes) in the PHC string format.
pub fn hash_password(password: &str) -> Result<String> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|error| Error::Internal(error.to_string()))?;
    let salt = SaltString::encode_b64(&salt).map_err(|error| Error::Internal(error.to_string()))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|error| Error::Internal(error.to_string()))
}

/// Argon2 takes tens of milliseconds of CPU: off the async workers. Its 19 MiB are given back to
/// the system after each check: glibc raises its mmap threshold once such a block is freed, so
/// later ones stay in the blocking threads' arenas (300 failing sign-ins at once held 555 MiB
/// after they ended, with four checks at a time).
async fn verify_password(password: &str, hash: &str) -> bool {
    let (password, hash) = (password.to_owned(), hash.to_owned());
    tokio::task::spawn_blocking(move || {
        let verified = PasswordHash::new(&hash).is_ok_and(|parsed| {
            Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        });
        crate::runs::trim_allocator();
        verified
    })
    .await
    .unwrap_or(false)
}

/// 32 random bytes, hex.
pub fn random_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|error| Error::Internal(error.to_string()))?;
    Ok(hex(&bytes))
}

pub fn token_hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn session_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, value)| *name == SESSION_COOKIE && !value.is_empty())
        .map(|(_, value)| value.to_owned())
}

/// The longest user name, in bytes.
const MAX_NAME_BYTES: usize = 64;

/// `glassbox users add NAME`: reads the password (one line) from standard input.
pub async fn add_user(store: &Store, name: &str, password: &str) -> Result<()> {
    let name = name.trim();
    if name.is_empty() || name.len() > MAX_NAME_BYTES || name.chars().any(char::is_control) {
        return Err(Error::InvalidField(
            "a user name is 1 to 64 printable characters".into(),
        ));
    }
    if password.chars().count() < 8 {
        return Err(Error::InvalidField(
            "a password has at least 8 characters".into(),
        ));
    }
    let user = StoredUser {
        user_id: format!("user_{}", uuid::Uuid::new_v4().simple()),
        name: name.to_owned(),
        password_hash: hash_password(password)?,
    };
    store.add_user(user, now_rfc3339()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_its_password_only_and_the_dummy_hash_parses() {
        let hash = hash_password("correct horse").expect("hash");
        assert!(hash.starts_with("$argon2id$"));
        let parsed = PasswordHash::new(&hash).expect("parse");
        assert!(Argon2::default()
            .verify_password(b"correct horse", &parsed)
            .is_ok());
        assert!(Argon2::default()
            .verify_password(b"wrong", &parsed)
            .is_err());
        assert!(PasswordHash::new(DUMMY_HASH).is_ok());
    }

    #[test]
    fn the_session_token_is_read_from_any_cookie_header() {
        let mut headers = HeaderMap::new();
        headers.append(
            header::COOKIE,
            "a=1; glassbox_session=abc; b=2".parse().expect("value"),
        );
        assert_eq!(session_token(&headers).as_deref(), Some("abc"));
    }
}
