//! One search result in the shape every backend's results take: title, URL,
//! snippet, and the date where the backend gave one.
//!
//! A backend's texts are untrusted and vary: Brave marks the query's words
//! with `<strong>`, engines behind SearXNG leave entities and tags in. So
//! every text is read as HTML, whitespace collapsed, and cut to a bound,
//! and a result is kept only if its URL is an absolute http(s) URL of sane
//! length (anything else could not be fetched anyway).

use reqwest::Url;
use serde_json::{Value, json};

use crate::html;

/// The longest title kept, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// The longest snippet kept, in characters.
pub const MAX_SNIPPET_CHARS: usize = 500;
/// The longest URL kept; a result with a longer one is dropped.
pub const MAX_URL_CHARS: usize = 2048;
/// The longest date or age text kept.
const MAX_DATE_CHARS: usize = 40;

/// One result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The page's title (its URL when the backend gave none).
    pub title: String,
    /// Where it is.
    pub url: String,
    /// What the backend quotes from it.
    pub snippet: String,
    /// When it was published, as the backend wrote it (ISO 8601 usually).
    pub published: Option<String>,
    /// How old it is, in the backend's words ("3 days ago").
    pub age: Option<String>,
}

impl Hit {
    /// A result from raw backend texts, or `None` when `url` is not an
    /// absolute http(s) URL of at most [`MAX_URL_CHARS`].
    pub fn new(title: &str, url: &str, snippet: &str) -> Option<Hit> {
        let url = url.trim();
        if url.chars().count() > MAX_URL_CHARS {
            return None;
        }
        let parsed = Url::parse(url).ok()?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
            return None;
        }
        let mut title = clean(title, MAX_TITLE_CHARS);
        if title.is_empty() {
            title = parsed.to_string();
        }
        Some(Hit {
            title,
            url: parsed.to_string(),
            snippet: clean(snippet, MAX_SNIPPET_CHARS),
            published: None,
            age: None,
        })
    }

    /// Sets the publication date, if `date` is a non-empty string.
    pub fn published(mut self, date: Option<&Value>) -> Hit {
        self.published = date_text(date);
        self
    }

    /// Sets the age, if `age` is a non-empty string.
    pub fn age(mut self, age: Option<&Value>) -> Hit {
        self.age = date_text(age);
        self
    }

    /// The result as the tool returns it; absent dates are left out.
    pub fn to_json(&self) -> Value {
        let mut hit = json!({
            "title": self.title,
            "url": self.url,
            "snippet": self.snippet,
        });
        if let Some(published) = &self.published {
            hit["published"] = json!(published);
        }
        if let Some(age) = &self.age {
            hit["age"] = json!(age);
        }
        hit
    }
}

/// Keeps the first `count` results, without repeating a URL.
pub fn first_distinct(hits: impl IntoIterator<Item = Hit>, count: usize) -> Vec<Hit> {
    let mut kept: Vec<Hit> = Vec::with_capacity(count);
    for hit in hits {
        if kept.len() == count {
            break;
        }
        if !kept.iter().any(|k| k.url == hit.url) {
            kept.push(hit);
        }
    }
    kept
}

/// A backend's text as plain text: tags dropped, entities decoded,
/// whitespace collapsed, cut at `max` characters (with "…").
pub fn clean(text: &str, max: usize) -> String {
    let plain = if text.contains('<') || text.contains('&') {
        html::to_text(text, None).text
    } else {
        text.to_owned()
    };
    let flat: String = plain
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

fn date_text(value: Option<&Value>) -> Option<String> {
    let text = clean(value?.as_str()?, MAX_DATE_CHARS);
    Some(text).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_read_as_html_and_bounded() {
        let cases = [
            (
                "<strong>Rust</strong> is a language &amp; more",
                "Rust is a language & more",
            ),
            ("a  \n\t b", "a b"),
            ("5 < 6 and 7 > 3", "5 < 6 and 7 > 3"),
            ("It&#x27;s here", "It's here"),
            ("", ""),
        ];
        for (raw, wanted) in cases {
            assert_eq!(clean(raw, 100), wanted, "{raw:?}");
        }
        let long = clean(&"word ".repeat(200), 50);
        assert_eq!(long.chars().count(), 50);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn only_http_urls_of_sane_length_are_kept() {
        assert!(Hit::new("t", "https://example.org/a", "s").is_some());
        for bad in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "/relative/path",
            "not a url",
            "",
        ] {
            assert!(Hit::new("t", bad, "s").is_none(), "{bad}");
        }
        let long = format!("https://example.org/{}", "a".repeat(MAX_URL_CHARS));
        assert!(Hit::new("t", &long, "s").is_none());
    }

    #[test]
    fn a_missing_title_becomes_the_url_and_dates_are_optional() {
        let hit = Hit::new(" ", "https://example.org", "s")
            .unwrap()
            .published(Some(&json!("2024-05-01T00:00:00")))
            .age(Some(&Value::Null));
        assert_eq!(hit.title, "https://example.org/");
        assert_eq!(
            hit.to_json(),
            json!({
                "title": "https://example.org/",
                "url": "https://example.org/",
                "snippet": "s",
                "published": "2024-05-01T00:00:00",
            })
        );
    }

    #[test]
    fn repeated_urls_are_kept_once_and_the_count_holds() {
        let hits = ["a", "b", "a", "c", "d"]
            .iter()
            .map(|p| Hit::new(p, &format!("https://example.org/{p}"), "").unwrap());
        let kept = first_distinct(hits, 3);
        let titles: Vec<_> = kept.iter().map(|h| h.title.as_str()).collect();
        assert_eq!(titles, ["a", "b", "c"]);
    }
}
