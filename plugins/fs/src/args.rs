//! The fs plugin's argument helpers: the SDK's [`Args`], and the
//! `encoding` field the file tools share.

use hearth_sdk::PluginError;
pub use hearth_sdk::args::{Args, invalid};

/// The optional `encoding` field: text (the default) or base64.
pub fn encoding(args: &Args) -> Result<Encoding, PluginError> {
    match args.opt_string("encoding")? {
        None | Some("text") => Ok(Encoding::Text),
        Some("base64") => Ok(Encoding::Base64),
        Some(other) => Err(invalid(
            "encoding",
            &format!("expected \"text\" or \"base64\", got {other:?}"),
        )),
    }
}

/// How file content travels in JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 text as a JSON string.
    Text,
    /// Any bytes, base64 (standard alphabet, padded).
    Base64,
}

impl Encoding {
    /// The name used in arguments and results.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Text => "text",
            Encoding::Base64 => "base64",
        }
    }
}
