//! The owner's secrets: API tokens and passwords the agent's tools use by
//! name, without the agent ever seeing them.
//!
//! They live in `$HEARTH_HOME/secrets.json` (mode 0600, never in
//! `hearth.db`), set with `hearth secret set NAME`, which writes the file
//! directly. The daemon re-reads the file when its identity (inode, size,
//! time) changes, checked with one `stat` at each use, so a secret set while
//! it runs is usable, and redacted, at once.
//!
//! Architecture invariant: the agent never holds a secret's value. The
//! prompt lists names; a Lua script writes `{{secret:NAME}}` where
//! `hearth.http` should put it, and the host fills it in after the egress
//! checks; every tool result and error, every response a script gets back,
//! every audit row and every log line has each known value (of 8 bytes or
//! more) replaced by `[secret:NAME]` ([`Redactor`]).

mod file;
mod name;
pub mod placeholder;
mod redact;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

pub use file::FILE_NAME;
pub use name::{MAX_NAME, MAX_VALUE, NAME_RULE, check_name, clean_value};
pub use redact::{MIN_REDACTED_LEN, Redactor, marker};

/// The owner's secrets, read from their file and cached until it changes.
pub struct Secrets {
    path: PathBuf,
    cache: Mutex<Cache>,
    /// The secrets the host itself uses (the model's key, a channel's
    /// token): no script may put them in a request.
    host_only: Mutex<std::collections::BTreeSet<String>>,
}

/// One secret as listed: its name and when it was set, never its value.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Listed {
    /// The name.
    pub name: String,
    /// When it was set (Unix ms).
    pub set_at_ms: i64,
}

/// The secrets as they were at one reading of the file.
#[derive(Default)]
pub struct Snapshot {
    values: BTreeMap<String, String>,
    redactor: Redactor,
}

/// What went wrong with a secret or the secrets file.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    /// A name that breaks [`NAME_RULE`].
    #[error("secret name {name:?} is invalid: {why}; {NAME_RULE}")]
    BadName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// An empty value.
    #[error("the secret's value is empty: give the value on stdin (or type it at the prompt)")]
    EmptyValue,
    /// A value over [`MAX_VALUE`] bytes.
    #[error("the secret's value is {len} bytes, over the limit of {MAX_VALUE}")]
    ValueTooLong {
        /// Its length.
        len: usize,
    },
    /// A value with a NUL byte.
    #[error("the secret's value contains a NUL byte, which no header or URL can carry")]
    ValueHasNul,
    /// A value that is not UTF-8 text.
    #[error("the secret's value is not UTF-8 text")]
    ValueNotUtf8,
    /// No secret has this name.
    #[error(
        "no secret named {name} is set (set it with `hearth secret set {name}`){}",
        known_list(known)
    )]
    Unknown {
        /// The name asked for.
        name: String,
        /// The names that are set.
        known: Vec<String>,
    },
    /// A `{{secret:NAME}}` placeholder that cannot be read.
    #[error("bad secret placeholder at byte {at}: {why}; write it as {{{{secret:NAME}}}}")]
    BadPlaceholder {
        /// Where it starts in its text.
        at: usize,
        /// What is wrong.
        why: String,
    },
    /// A secret the host uses for itself, asked for by a script.
    #[error(
        "the secret {name} is one of hearth's own credentials (the config names it for the model \
         or a channel); scripts cannot use it: set another secret for the tool"
    )]
    HostOnly {
        /// The secret.
        name: String,
    },
    /// The file's group or others have any permission on it.
    #[error(
        "{path} has mode {mode:04o}, so other users may read or change it; hearth reads \
         secrets only from a file its owner alone can use: run `chmod 600 {path}` (and \
         consider changing the secrets it holds)"
    )]
    Unsafe {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The file could not be read.
    #[error("cannot read the secrets file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not what hearth writes.
    #[error(
        "the secrets file {path} is damaged: {why}; fix or remove it, then set the secrets again"
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The file could not be written.
    #[error("cannot write the secrets file {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

struct Cache {
    stamp: Option<file::Stamp>,
    snapshot: Arc<Snapshot>,
    /// Whether `snapshot` was read at all (the first use reads).
    loaded: bool,
}

impl Secrets {
    /// The secrets of the home `home`; nothing is read until they are used.
    pub fn open(home: &Path) -> Secrets {
        Secrets {
            path: home.join(FILE_NAME),
            cache: Mutex::new(Cache {
                stamp: None,
                snapshot: Arc::default(),
                loaded: false,
            }),
            host_only: Mutex::default(),
        }
    }

    /// Marks `names` as the host's own credentials: [`Secrets::for_script`]
    /// refuses them, so an agent's script cannot send the owner's model key
    /// or bot token to a server of its choosing.
    pub fn reserve_for_host(&self, names: impl IntoIterator<Item = String>) {
        self.host_only
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(names);
    }

    /// Checks that a script may use the secret `name`.
    pub fn for_script(&self, name: &str) -> Result<(), SecretsError> {
        if self
            .host_only
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(name)
        {
            return Err(SecretsError::HostOnly {
                name: name.to_owned(),
            });
        }
        Ok(())
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every secret's name and when it was set, by name.
    pub fn list(&self) -> Result<Vec<Listed>, SecretsError> {
        let (stored, _) = file::read(&self.path)?;
        Ok(stored
            .into_iter()
            .map(|(name, s)| Listed {
                name,
                set_at_ms: s.set_at_ms,
            })
            .collect())
    }

    /// Sets `name` to the value `raw` holds (checked and trimmed of one
    /// trailing newline by [`clean_value`]), replacing any earlier value.
    pub fn set(&self, name: &str, raw: &[u8]) -> Result<(), SecretsError> {
        check_name(name)?;
        let value = clean_value(raw)?;
        let _one_writer = file::lock(&self.path)?;
        let (mut stored, _) = file::read(&self.path)?;
        stored.insert(
            name.to_owned(),
            file::Stored {
                value,
                set_at_ms: crate::store::now_ms(),
            },
        );
        file::write(&self.path, stored)
    }

    /// Removes `name`; an unknown name is an error that lists the known
    /// ones.
    pub fn remove(&self, name: &str) -> Result<(), SecretsError> {
        check_name(name)?;
        let _one_writer = file::lock(&self.path)?;
        let (mut stored, _) = file::read(&self.path)?;
        if stored.remove(name).is_none() {
            return Err(SecretsError::Unknown {
                name: name.to_owned(),
                known: stored.into_keys().collect(),
            });
        }
        file::write(&self.path, stored)
    }

    /// The secrets as the file holds them now: read again only when the
    /// file changed since the last reading.
    pub fn current(&self) -> Result<Arc<Snapshot>, SecretsError> {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let stamp = file::Stamp::of(&self.path)?;
        if cache.loaded && stamp == cache.stamp {
            return Ok(Arc::clone(&cache.snapshot));
        }
        let (stored, stamp) = file::read(&self.path)?;
        cache.snapshot = Arc::new(Snapshot::new(
            stored.into_iter().map(|(k, s)| (k, s.value)).collect(),
        ));
        cache.stamp = stamp;
        cache.loaded = true;
        Ok(Arc::clone(&cache.snapshot))
    }

    /// The newest secrets that could be read: when the file cannot be read
    /// now (see [`Secrets::current`] for why), the last good reading. For
    /// redaction, which must not fail and must not log (the log itself is
    /// redacted through this).
    pub fn latest(&self) -> Arc<Snapshot> {
        self.current().unwrap_or_else(|_| {
            let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(&cache.snapshot)
        })
    }

    /// The names, for the prompt.
    pub fn names(&self) -> Vec<String> {
        self.latest().names().map(str::to_owned).collect()
    }

    /// `text` with every known value replaced by `[secret:NAME]`.
    pub fn redact_text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let snapshot = self.latest();
        match snapshot.redactor.redact_text(text) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            Cow::Owned(clean) => Cow::Owned(clean),
        }
    }

    /// `value` with every known value replaced by `[secret:NAME]`.
    pub fn redact_json(&self, value: Value) -> Value {
        self.latest().redactor.redact_json(value)
    }
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets").field("path", &self.path).finish()
    }
}

impl Snapshot {
    /// A snapshot of `(name, value)` pairs.
    pub fn new(values: BTreeMap<String, String>) -> Snapshot {
        let redactor = Redactor::new(values.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        Snapshot { values, redactor }
    }

    /// The names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }

    /// The value of `name`; an unknown name is an error naming it and the
    /// known ones.
    pub fn value(&self, name: &str) -> Result<&str, SecretsError> {
        self.values
            .get(name)
            .map(String::as_str)
            .ok_or_else(|| SecretsError::Unknown {
                name: name.to_owned(),
                known: self.values.keys().cloned().collect(),
            })
    }

    /// The redaction of every value in this snapshot.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("names", &self.values.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        "; no secrets are set".into()
    } else {
        format!("; set now: {}", known.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use serde_json::json;

    use super::*;

    #[test]
    fn set_list_remove_and_reread_on_change() {
        let home = tempfile::tempdir().unwrap();
        let secrets = Secrets::open(home.path());
        assert!(secrets.list().unwrap().is_empty());
        assert_eq!(secrets.latest().names().count(), 0);

        secrets.set("API_TOKEN", b"first-value-123\n").unwrap();
        let mode = std::fs::metadata(secrets.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            secrets.current().unwrap().value("API_TOKEN").unwrap(),
            "first-value-123"
        );

        // Another process (the CLI) changes the file: the next use sees it.
        Secrets::open(home.path())
            .set("API_TOKEN", b"second-value-456")
            .unwrap();
        assert_eq!(
            secrets.current().unwrap().value("API_TOKEN").unwrap(),
            "second-value-456"
        );
        assert_eq!(
            secrets.redact_text("x second-value-456 y"),
            "x [secret:API_TOKEN] y"
        );
        let names: Vec<String> = secrets
            .list()
            .unwrap()
            .into_iter()
            .map(|l| l.name)
            .collect();
        assert_eq!(names, ["API_TOKEN"]);

        let err = secrets.remove("OTHER").unwrap_err().to_string();
        assert!(
            err.contains("no secret named OTHER") && err.contains("API_TOKEN"),
            "{err}"
        );
        secrets.remove("API_TOKEN").unwrap();
        let err = secrets.current().unwrap().value("API_TOKEN").unwrap_err();
        assert!(err.to_string().contains("no secrets are set"), "{err}");
    }

    #[test]
    fn a_file_others_can_read_is_refused_and_the_last_good_reading_redacts() {
        let home = tempfile::tempdir().unwrap();
        let secrets = Secrets::open(home.path());
        secrets.set("KEY", b"value-long-enough").unwrap();
        assert_eq!(secrets.names(), ["KEY"]);
        std::fs::set_permissions(secrets.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = secrets.current().unwrap_err().to_string();
        assert!(
            err.contains("mode 0644") && err.contains("chmod 600"),
            "{err}"
        );
        assert!(err.contains(&secrets.path().display().to_string()), "{err}");
        assert_eq!(secrets.redact_text("value-long-enough"), "[secret:KEY]");
        let err = secrets.set("OTHER", b"x").unwrap_err();
        assert!(matches!(err, SecretsError::Unsafe { .. }), "{err}");
    }

    #[test]
    fn bad_input_is_refused_with_the_reason() {
        let home = tempfile::tempdir().unwrap();
        let secrets = Secrets::open(home.path());
        for (name, value, why) in [
            ("lower", "value", "starts with 'l'"),
            ("OK", "", "empty"),
            ("OK", "\n", "empty"),
            ("OK", "a\0b", "NUL"),
        ] {
            let err = secrets.set(name, value.as_bytes()).unwrap_err().to_string();
            assert!(err.contains(why), "{name} {value:?}: {err}");
        }
        std::fs::write(secrets.path(), "{not json").unwrap();
        std::fs::set_permissions(secrets.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
        let err = secrets.list().unwrap_err().to_string();
        assert!(err.contains("is damaged"), "{err}");
    }

    #[test]
    fn the_hosts_own_secrets_are_refused_to_scripts() {
        let home = tempfile::tempdir().unwrap();
        let secrets = Secrets::open(home.path());
        assert!(secrets.for_script("LLM_KEY").is_ok(), "not reserved yet");
        secrets.reserve_for_host(["LLM_KEY".to_owned(), "BOT_TOKEN".to_owned()]);
        for name in ["LLM_KEY", "BOT_TOKEN"] {
            let err = secrets.for_script(name).unwrap_err();
            assert!(
                matches!(&err, SecretsError::HostOnly { name: n } if n == name),
                "{err}"
            );
        }
        assert!(secrets.for_script("SITE_PASSWORD").is_ok());
    }

    #[test]
    fn json_and_a_snapshots_redactor_hide_the_values() {
        let home = tempfile::tempdir().unwrap();
        let secrets = Secrets::open(home.path());
        secrets.set("KEY", b"value-long-enough").unwrap();
        assert_eq!(
            secrets.redact_json(json!({ "said": ["a value-long-enough b"] })),
            json!({ "said": ["a [secret:KEY] b"] })
        );
        let snapshot = secrets.current().unwrap();
        assert_eq!(
            snapshot.redactor().redact_text("value-long-enough"),
            "[secret:KEY]"
        );
        let shown = format!("{secrets:?}");
        assert!(
            shown.contains("Secrets") && shown.contains(&home.path().display().to_string()),
            "{shown}"
        );
    }

    #[test]
    fn debug_output_never_shows_a_value() {
        let snapshot = Snapshot::new([("KEY".to_owned(), "value-long-enough".to_owned())].into());
        let shown = format!("{snapshot:?}");
        assert!(
            shown.contains("KEY") && !shown.contains("value-long-enough"),
            "{shown}"
        );
        let stored = file::Stored {
            value: "value-long-enough".into(),
            set_at_ms: 1,
        };
        assert!(!format!("{stored:?}").contains("value-long-enough"));
    }
}
