//! The soak's short form: 3,000 messages in two and a half minutes (20 a
//! second; `HEARTH_SOAK_SECS` and `HEARTH_SOAK_RATE` change them) to the
//! daemon with every bundled plugin, with tool calls and canvas browsers
//! coming and going. As many messages as five minutes at the long form's
//! 10 a second, so a leak per message shows as clearly, in half of CI's
//! time. It fails if the RSS grows more than 10% after warm-up, if open
//! file descriptors or threads grow, if a message goes unanswered, or if
//! the log warns. The hour-long form is `cargo bench -p hearth-tests
//! --bench soak`.

use hearth_tests::soak::{self, Options};

#[test]
fn three_thousand_messages_of_traffic_leave_memory_fds_and_threads_flat() {
    let report = soak::run(&Options::from_env(150, 20.0));
    report.print();
    let failures = report.failures();
    assert!(
        failures.is_empty(),
        "the soak failed:\n{}",
        failures.join("\n")
    );
}
