//! OpenAI's embeddings wire format, judged strictly: an answer is
//! `{"data": [{"index": i, "embedding": [f32; dims]}, ...], "model", "usage"}`
//! with exactly one vector per text sent, each index once, every vector
//! of the expected length, every value a finite number and not all zero.
//! Anything else is refused with what was wrong and where, and the texts
//! stay queued. Error answers are `{"error": {"message", "type", "code"}}`.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use hearth_base::embed::{EmbedError, MAX_DIMENSIONS};

/// The most bytes an answer for `n` texts may have: about 25 bytes per
/// number written out (`-0.0123456789012345678,`) and room for the rest;
/// `dims` is the expected length, 0 when not known yet.
pub fn answer_cap(n: usize, dims: usize) -> u64 {
    let dims = if dims == 0 { MAX_DIMENSIONS } else { dims };
    (n as u64) * (dims as u64) * 26 + (n as u64) * 256 + 64 * 1024
}

/// `Retry-After` as a delay: seconds (`"3"`, `"1.5"`), capped at an hour.
/// An HTTP date is taken as a minute, since the clocks may differ.
pub fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    match value.parse::<f64>() {
        Ok(s) if s.is_finite() && s >= 0.0 => Some(Duration::from_secs_f64(s.min(3_600.0))),
        Ok(_) => None,
        Err(_) if value.contains("GMT") => Some(Duration::from_secs(60)),
        Err(_) => None,
    }
}

/// The most of an error answer kept in a message.
const ERROR_CHARS: usize = 300;

/// What an error answer says: `error.message` (with `error.type`, and
/// `error.code` when it is a string), or the body's start as text.
pub fn error_message(body: &[u8]) -> String {
    let said = match serde_json::from_slice::<Value>(body) {
        Ok(json) => {
            let error = &json["error"];
            let message = error["message"]
                .as_str()
                .or_else(|| error.as_str())
                .or_else(|| json["detail"].as_str())
                .map(str::to_owned)
                .unwrap_or_else(|| json.to_string());
            let kind = [error["type"].as_str(), error["code"].as_str()]
                .into_iter()
                .flatten()
                .filter(|k| !k.is_empty())
                .collect::<Vec<_>>()
                .join(", ");
            if kind.is_empty() {
                message
            } else {
                format!("{message} ({kind})")
            }
        }
        Err(_) => String::from_utf8_lossy(body).trim().to_owned(),
    };
    let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
    match said.char_indices().nth(ERROR_CHARS) {
        Some((at, _)) => format!("{}…", &said[..at]),
        None if said.is_empty() => "(no message)".into(),
        None => said,
    }
}

#[derive(Deserialize)]
struct Answer {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    embedding: Vec<Value>,
}

/// The `n` vectors of an answer, in the order of the texts; `dims` is the
/// length each must have (0: any, the same for all).
pub fn vectors(body: &[u8], n: usize, dims: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    let bad = |what: String| Err(EmbedError::Malformed(what));
    let answer: Answer = match serde_json::from_slice(body) {
        Ok(answer) => answer,
        Err(e) => return bad(format!("not an embeddings answer ({e})")),
    };
    if answer.data.len() != n {
        return bad(format!(
            "`data` has {} vectors for the {n} texts sent",
            answer.data.len()
        ));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; n];
    let mut length = dims;
    for (at, item) in answer.data.into_iter().enumerate() {
        if item.index >= n || out[item.index].is_some() {
            return bad(format!(
                "`data[{at}].index` is {}: each of 0 to {} once",
                item.index,
                n - 1
            ));
        }
        let len = item.embedding.len();
        if len == 0 || len > MAX_DIMENSIONS {
            return bad(format!(
                "`data[{at}].embedding` has {len} numbers (1 to {MAX_DIMENSIONS} taken)"
            ));
        }
        if length == 0 {
            length = len;
        }
        if len != length {
            return bad(format!(
                "`data[{at}].embedding` has {len} numbers where {length} were expected"
            ));
        }
        let mut vector = Vec::with_capacity(len);
        for (i, value) in item.embedding.iter().enumerate() {
            match value.as_f64() {
                Some(x) if x.is_finite() && (x as f32).is_finite() => vector.push(x as f32),
                _ => {
                    return bad(format!(
                        "`data[{at}].embedding[{i}]` is {value}, not a finite number"
                    ));
                }
            }
        }
        if vector.iter().all(|x| *x == 0.0) {
            return bad(format!("`data[{at}].embedding` is all zeros"));
        }
        out[item.index] = Some(vector);
    }
    Ok(out.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_comes_back_in_the_order_of_its_indexes() {
        let body = br#"{"object":"list","data":[
            {"object":"embedding","index":1,"embedding":[0.0,1.0]},
            {"object":"embedding","index":0,"embedding":[1.0,0.5]}],
            "model":"m","usage":{"prompt_tokens":2,"total_tokens":2}}"#;
        assert_eq!(
            vectors(body, 2, 0).unwrap(),
            vec![vec![1.0, 0.5], vec![0.0, 1.0]]
        );
    }

    #[test]
    fn bad_answers_are_refused_saying_where() {
        let cases: [(&[u8], usize, usize, &str); 8] = [
            (b"not json", 1, 0, "not an embeddings answer"),
            (br#"{"data":[]}"#, 1, 0, "0 vectors for the 1 texts"),
            (
                br#"{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[1]}]}"#,
                1,
                0,
                "2 vectors for the 1",
            ),
            (
                br#"{"data":[{"index":0,"embedding":[1,2]}]}"#,
                1,
                3,
                "2 numbers where 3",
            ),
            (
                br#"{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1]}]}"#,
                2,
                0,
                "`data[1].embedding` has 1 numbers where 2",
            ),
            (
                br#"{"data":[{"index":0,"embedding":[1,"NaN"]}]}"#,
                1,
                0,
                "embedding[1]` is \"NaN\"",
            ),
            (
                br#"{"data":[{"index":0,"embedding":[0,0]}]}"#,
                1,
                0,
                "all zeros",
            ),
            (
                br#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}"#,
                2,
                0,
                "`data[1].index` is 0",
            ),
        ];
        for (body, n, dims, says) in cases {
            let e = vectors(body, n, dims).unwrap_err().to_string();
            assert!(e.contains(says), "{}: {e}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn error_bodies_and_retry_after_are_read() {
        let body = br#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
        assert_eq!(
            error_message(body),
            "Rate limit reached (requests, rate_limit_exceeded)"
        );
        assert_eq!(retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(retry_after("soon"), None);
    }
}
