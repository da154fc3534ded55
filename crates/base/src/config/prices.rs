//! `[prices."MODEL"]`: what a model's tokens cost, in US dollars per
//! million tokens, over the built-in estimates (`usage::prices`).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::tokens::Price;

/// One `[prices."MODEL"]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPrice {
    input: f64,
    output: f64,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
}

/// The validated table; a cache price left out is the input price.
pub(super) fn build(
    raw: BTreeMap<String, RawPrice>,
) -> Result<BTreeMap<String, Price>, (String, String)> {
    let mut prices = BTreeMap::new();
    for (model, raw) in raw {
        if model.trim().is_empty() {
            return Err((
                "prices".into(),
                "a model name must not be empty: write [prices.\"MODEL\"]".into(),
            ));
        }
        let price = Price {
            input: raw.input,
            output: raw.output,
            cache_read: raw.cache_read.unwrap_or(raw.input),
            cache_write: raw.cache_write.unwrap_or(raw.input),
        };
        let fields = [
            ("input", price.input),
            ("output", price.output),
            ("cache_read", price.cache_read),
            ("cache_write", price.cache_write),
        ];
        for (field, value) in fields {
            if !value.is_finite() || value < 0.0 {
                return Err((
                    format!("prices.{model:?}.{field}"),
                    format!(
                        "{value} is not a price: write US dollars per million tokens, 0 or more"
                    ),
                ));
            }
        }
        prices.insert(model, price);
    }
    Ok(prices)
}
