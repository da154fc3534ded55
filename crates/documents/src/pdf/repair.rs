//! Mends a loaded PDF so pdf-extract can walk it without running away:
//! pdf-extract follows `/Parent` links and form XObjects recursively and
//! with no limit, so a page whose parent is itself, or a form that draws
//! itself, would overflow the stack (an abort, which no `catch_unwind`
//! stops). Each page read gets its inherited `MediaBox` and `Resources`
//! set on itself, and every form that nests too deep, draws itself, or is
//! drawn too many times is emptied before extraction.

use std::collections::BTreeSet;

use lopdf::content::Content;
use lopdf::{Dictionary, Document, Object, ObjectId};

/// The most `/Parent` links followed up from a page.
const MAX_PARENTS: usize = 64;
/// The deepest forms drawn inside forms.
const MAX_NESTING: usize = 12;
/// The most forms drawn for one page, counting each time one is drawn.
const MAX_DRAWS: usize = 2_000;
/// The page size used when a page gives none (US Letter, in points).
const LETTER: [f32; 4] = [0.0, 0.0, 612.0, 792.0];

/// What the repairs changed, for the notes.
#[derive(Debug, Default)]
pub(crate) struct Repairs {
    /// Forms emptied.
    pub(crate) forms_cut: usize,
}

/// Sets each of `pages` its own box and resources, and empties the forms
/// that would make extraction recurse without end, or draw more than
/// `cap` bytes of content for one page.
pub(crate) fn repair(doc: &mut Document, pages: &[ObjectId], cap: usize) -> Repairs {
    for &page in pages {
        let (media_box, resources) = inherited(doc, page);
        if let Ok(dict) = doc.get_dictionary_mut(page) {
            dict.set("MediaBox", media_box);
            dict.set(
                "Resources",
                resources.unwrap_or_else(|| Object::Dictionary(Dictionary::new())),
            );
            if dict.get(b"ArtBox").is_ok_and(|a| four_numbers(a).is_none()) {
                dict.remove(b"ArtBox");
            }
        }
    }
    let mut cut = BTreeSet::new();
    for &page in pages {
        let Some(content) = page_content(doc, page, cap) else {
            continue;
        };
        let resources = doc
            .get_dictionary(page)
            .ok()
            .and_then(|d| d.get_deref(b"Resources", doc).ok())
            .and_then(|r| r.as_dict().ok());
        let mut budget = Budget {
            draws: MAX_DRAWS,
            bytes: cap,
        };
        walk(
            doc,
            &content,
            resources,
            &mut Vec::new(),
            &mut budget,
            &mut cut,
        );
    }
    for &id in &cut {
        if let Ok(Object::Stream(stream)) = doc.get_object_mut(id) {
            stream.dict.remove(b"Filter");
            stream.dict.remove(b"DecodeParms");
            stream.set_content(Vec::new());
        }
    }
    Repairs {
        forms_cut: cut.len(),
    }
}

/// The `MediaBox` (checked: four numbers) and `Resources` a page has or
/// inherits, following at most [`MAX_PARENTS`] links and never one twice.
fn inherited(doc: &Document, page: ObjectId) -> (Object, Option<Object>) {
    let mut media_box = None;
    let mut resources = None;
    let mut seen = vec![page];
    let mut node = doc.get_dictionary(page).ok();
    while let Some(dict) = node {
        if media_box.is_none() {
            media_box = dict.get_deref(b"MediaBox", doc).ok().and_then(four_numbers);
        }
        if resources.is_none() {
            resources = dict.get(b"Resources").ok().cloned();
        }
        if (media_box.is_some() && resources.is_some()) || seen.len() > MAX_PARENTS {
            break;
        }
        let parent = dict.get(b"Parent").and_then(Object::as_reference).ok();
        node = parent.filter(|p| !seen.contains(p)).and_then(|p| {
            seen.push(p);
            doc.get_dictionary(p).ok()
        });
    }
    let media_box = media_box.unwrap_or(LETTER);
    (
        Object::Array(media_box.iter().map(|&n| Object::Real(n)).collect()),
        resources,
    )
}

/// An array of four numbers, as a box must be.
fn four_numbers(object: &Object) -> Option<[f32; 4]> {
    let array = object.as_array().ok()?;
    if array.len() != 4 {
        return None;
    }
    let mut out = [0.0; 4];
    for (slot, n) in out.iter_mut().zip(array) {
        *slot = n.as_float().ok().filter(|f| f.is_finite())?;
    }
    Some(out)
}

/// A page's content streams, decoded and joined as pdf-extract reads
/// them; `None` past `cap` bytes (a page can list one stream many times).
pub(crate) fn page_content(doc: &Document, page: ObjectId, cap: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for id in doc.get_page_contents(page) {
        let Ok(Object::Stream(stream)) = doc.get_object(id) else {
            continue;
        };
        let data = stream
            .decompressed_content()
            .unwrap_or_else(|_| stream.content.clone());
        if out.len() + data.len() > cap {
            return None;
        }
        out.extend_from_slice(&data);
        out.push(b'\n');
    }
    Some(out)
}

/// What one page's forms may still draw.
struct Budget {
    draws: usize,
    bytes: usize,
}

/// Goes through the forms `content` draws (`/Name Do`), depth first as
/// pdf-extract will, adding to `cut` each form that draws itself, nests
/// past [`MAX_NESTING`], or is drawn when the page's budget of draws or
/// bytes is spent.
fn walk(
    doc: &Document,
    content: &[u8],
    resources: Option<&Dictionary>,
    path: &mut Vec<ObjectId>,
    budget: &mut Budget,
    cut: &mut BTreeSet<ObjectId>,
) {
    let Ok(content) = Content::decode(content) else {
        return;
    };
    let xobjects = resources
        .and_then(|r| r.get_deref(b"XObject", doc).ok())
        .and_then(|x| x.as_dict().ok());
    for op in &content.operations {
        if op.operator != "Do" {
            continue;
        }
        let Some(name) = op.operands.first().and_then(|n| n.as_name().ok()) else {
            continue;
        };
        let Some(id) = xobjects
            .and_then(|x| x.get(name).ok())
            .and_then(|o| o.as_reference().ok())
        else {
            continue;
        };
        let Ok(Object::Stream(form)) = doc.get_object(id) else {
            continue;
        };
        if !form
            .dict
            .get(b"Subtype")
            .and_then(Object::as_name)
            .is_ok_and(|s| s == b"Form")
        {
            continue;
        }
        if cut.contains(&id) {
            continue;
        }
        if budget.draws == 0 || path.len() >= MAX_NESTING || path.contains(&id) {
            cut.insert(id);
            continue;
        }
        budget.draws -= 1;
        let inner = form
            .decompressed_content()
            .unwrap_or_else(|_| form.content.clone());
        let Some(left) = budget.bytes.checked_sub(inner.len()) else {
            cut.insert(id);
            continue;
        };
        budget.bytes = left;
        let own = form
            .dict
            .get_deref(b"Resources", doc)
            .ok()
            .and_then(|r| r.as_dict().ok());
        path.push(id);
        walk(doc, &inner, own.or(resources), path, budget, cut);
        path.pop();
    }
}
