//! Which models see images, when `[llm] vision` does not say.
//!
//! Every Claude model since Claude 3 does; of the rest, the families known
//! to take images through an OpenAI-compatible API (OpenAI's own, Gemini,
//! and the open models served by Ollama, vLLM or llama.cpp) are listed
//! here. Anything else is taken to be text-only: a model that is sent an
//! image it cannot take fails the whole request, while one that could
//! have seen it only gets a note (and the owner can set `vision = true`).

use hearth_base::config::ProviderKind;

/// Model names (the part after any `provider/` prefix, lowercased) that
/// start with one of these take images.
const VISION_PREFIXES: &[&str] = &[
    "gpt-4o",
    "chatgpt-4o",
    "gpt-4.1",
    "gpt-4.5",
    "gpt-4-turbo",
    "gpt-4-vision",
    "gpt-5",
    "o1",
    "o3",
    "o4",
    "claude-3",
    "claude-sonnet-4",
    "claude-opus-4",
    "claude-haiku-4",
    "gemini",
    "gemma3",
    "gemma-3",
    "llava",
    "bakllava",
    "llama4",
    "llama-4",
    "qwen2.5vl",
    "minicpm-v",
    "moondream",
    "pixtral",
    "mistral-small3.1",
    "mistral-small-3.1",
    "mistral-medium-3",
    "internvl",
];

/// Names containing one of these take images, whatever the family.
const VISION_MARKS: &[&str] = &["vision", "-vl", "vl:", "llava"];

/// Names starting with these do not, though a prefix above matches them.
const TEXT_ONLY_PREFIXES: &[&str] = &[
    "o1-mini",
    "o1-preview",
    "o3-mini",
    "gpt-4o-audio",
    "gpt-4o-realtime",
    "gemma3:1b",
    "gemma-3-1b",
    "claude-2",
    "claude-instant",
];

/// Whether `model` on `provider` takes images, by its name.
pub fn sees_images(provider: ProviderKind, model: &str) -> bool {
    let lower = model.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    if TEXT_ONLY_PREFIXES.iter().any(|p| name.starts_with(p)) {
        return false;
    }
    match provider {
        ProviderKind::Anthropic => true,
        ProviderKind::OpenAi => {
            VISION_PREFIXES.iter().any(|p| name.starts_with(p))
                || VISION_MARKS.iter().any(|m| name.contains(m))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_families_are_told_apart() {
        use ProviderKind::{Anthropic, OpenAi};
        let cases = [
            (Anthropic, "claude-sonnet-4-5", true),
            (Anthropic, "claude-3-5-haiku-latest", true),
            (Anthropic, "claude-2.1", false),
            (OpenAi, "gpt-4o-mini", true),
            (OpenAi, "gpt-4.1", true),
            (OpenAi, "o3-mini", false),
            (OpenAi, "o3", true),
            (OpenAi, "gpt-3.5-turbo", false),
            (OpenAi, "openai/gpt-4o", true),
            (OpenAi, "anthropic/claude-3.5-sonnet", true),
            (OpenAi, "google/gemini-2.5-flash", true),
            (OpenAi, "llava:13b", true),
            (OpenAi, "llama3.2-vision:11b", true),
            (OpenAi, "qwen2.5vl:7b", true),
            (OpenAi, "Qwen/Qwen2.5-VL-7B-Instruct", true),
            (OpenAi, "gemma3:1b", false),
            (OpenAi, "gemma3:12b", true),
            (OpenAi, "llama3.1:8b", false),
            (OpenAi, "qwen2.5:7b", false),
            (OpenAi, "mistral-nemo", false),
            (OpenAi, "fake-model", false),
        ];
        for (provider, model, wanted) in cases {
            assert_eq!(sees_images(provider, model), wanted, "{provider:?} {model}");
        }
    }
}
