//! Fuzzing the plan reader with plans as leaders write them, mutated.
//! Properties: no panic; every refusal says what was wrong; a plan that
//! passes the checks has its dependencies among its ids and survives being
//! written to `plan.md` and read back unchanged.

use std::collections::BTreeSet;

use hearth_fuzz::{Rng, Target};

use super::plan::{self, Context};

const SEED: &str = "Here is the plan.\n---\nsummary: Build it\ndeliverables:\n  - id: D1\n    title: Design\n    description: what done means\n    assignee: ada\n  - id: D2\n    title: Build\n    assignee: bob\n    depends_on: [D1]\n  - id: D3\n    title: Ship\n    assignee: ada\n    dependencies: [D1, D2]\n---\n# Notes\n";

#[test]
fn every_plan_is_read_or_refused_with_a_reason() {
    Target::new("group_plan")
        .seed(SEED)
        .seed("---\ndeliverables: []\n---\n")
        .seed("---\nsummary: x\ndeliverables:\n  - {id: A, title: a, assignee: ada, depends_on: [B]}\n  - {id: B, title: b, assignee: bob, depends_on: [A]}\n---\n")
        .tokens(&[
            "---\n",
            "- id: ",
            "  depends_on: [",
            "D1",
            "assignee: carol\n",
            "&a [x, x]\n",
            "*a",
            "!!binary aGk=",
            "? complex key\n",
            "{",
            "|\n  ---\n",
            "\u{feff}",
            "\t",
        ])
        .run(check);
}

fn check(input: &[u8], _: &mut Rng) {
    let text = String::from_utf8_lossy(input);
    let plan = match plan::from_markdown(&text) {
        Ok(plan) => plan,
        Err(why) => {
            assert!(!why.trim().is_empty(), "an empty refusal");
            return;
        }
    };
    let members = ["ada".to_owned(), "bob".to_owned()];
    let complete = BTreeSet::new();
    let errors = plan::validate(
        &plan,
        &Context {
            members: &members,
            complete: &complete,
        },
    );
    assert!(errors.iter().all(|e| !e.trim().is_empty()));
    if errors.is_empty() {
        let ids: BTreeSet<&str> = plan.deliverables.iter().map(|d| d.id.as_str()).collect();
        for d in &plan.deliverables {
            assert!(d.depends_on.iter().all(|k| ids.contains(k.as_str())));
        }
        let again = plan::from_markdown(&plan::to_markdown(&plan, "the mission\n---\n"))
            .expect("a written plan reads back");
        assert_eq!(again, plan);
    }
}
