//! Whether the configured model can be reached, for `hearth doctor`.
//!
//! The check asks the provider about the model rather than for an answer:
//! Anthropic's `GET /v1/models/{model}` and the OpenAI-compatible
//! `GET /models` list. That proves the address, the network, the key and
//! the model's name in one small request, and it costs no tokens, so there
//! is nothing to record as usage and nothing a budget must allow. One
//! attempt, no retries: the owner is waiting for the verdict.

use std::time::Duration;

use serde_json::Value;

use super::{Llm, LlmError, describe, http_error};
use hearth_base::config::ProviderKind;

/// How long the check may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(15);

/// What the provider said about the configured model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelCheck {
    /// The provider knows the model.
    Known,
    /// The provider answered, but its list does not name the model (an
    /// OpenAI-compatible server that has not pulled it, a typo).
    NotListed {
        /// How many models the server lists.
        listed: usize,
    },
}

impl Llm {
    /// Asks the provider whether it knows the primary model.
    pub async fn check(&self) -> Result<ModelCheck, LlmError> {
        let base = self.config.base_url.trim_end_matches('/');
        let url = match self.config.provider {
            ProviderKind::Anthropic => format!("{base}/v1/models/{}", path_segment(self.model())),
            ProviderKind::OpenAi => format!("{base}/models"),
        };
        let request = self
            .authorized(self.http.get(&url))
            .timeout(CHECK_TIMEOUT)
            .send();
        let response = request
            .await
            .map_err(|e| LlmError::Connection(describe(&e)))?;
        if !response.status().is_success() {
            return Err(http_error(response).await);
        }
        // A catalogue of a few hundred models is tens of kilobytes.
        let limit = 4 << 20;
        let text = super::body_prefix(response, limit + 1)
            .await
            .ok_or_else(|| LlmError::Truncated("the model list broke off".into()))?;
        if text.len() > limit {
            return Err(LlmError::TooLarge(format!(
                "the model list is over {} MiB",
                limit >> 20
            )));
        }
        let body: Value = serde_json::from_str(&text)
            .map_err(|e| LlmError::Malformed(format!("the model list is not JSON: {e}")))?;
        match self.config.provider {
            ProviderKind::Anthropic => Ok(ModelCheck::Known),
            ProviderKind::OpenAi => listed(&body, self.model()),
        }
    }
}

/// Reads an OpenAI-style list (`{"data": [{"id": ...}]}`) for `model`.
fn listed(body: &Value, model: &str) -> Result<ModelCheck, LlmError> {
    let Some(models) = body["data"].as_array() else {
        return Err(LlmError::Malformed(
            "the model list has no `data` array".into(),
        ));
    };
    if models.iter().any(|m| m["id"].as_str() == Some(model)) {
        Ok(ModelCheck::Known)
    } else {
        Ok(ModelCheck::NotListed {
            listed: models.len(),
        })
    }
}

/// `name` as one URL path segment: every byte outside the unreserved set
/// percent-encoded, and the dots of `.` and `..` too, so a model name
/// cannot change the path.
fn path_segment(name: &str) -> String {
    let dots_only = name.bytes().all(|b| b == b'.');
    name.bytes()
        .map(|b| match b {
            b'.' if dots_only => "%2E".to_owned(),
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_list_names_the_model_or_not() {
        let body = json!({ "object": "list", "data": [{ "id": "a" }, { "id": "llama3" }] });
        assert_eq!(listed(&body, "llama3").unwrap(), ModelCheck::Known);
        assert_eq!(
            listed(&body, "llama4").unwrap(),
            ModelCheck::NotListed { listed: 2 }
        );
        assert!(listed(&json!({ "models": [] }), "x").is_err());
    }

    #[test]
    fn a_model_name_stays_one_path_segment() {
        assert_eq!(path_segment("claude-sonnet-4-5"), "claude-sonnet-4-5");
        assert_eq!(path_segment("../v1/x?y"), "..%2Fv1%2Fx%3Fy");
        assert_eq!(path_segment(".."), "%2E%2E");
    }
}
