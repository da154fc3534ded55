//! The soak's short form: five minutes (`HEARTH_SOAK_SECS` changes it) of
//! the daemon with every bundled plugin at 10 messages a second, with tool
//! calls and canvas browsers coming and going. It fails if the RSS grows
//! more than 10% after warm-up, if open file descriptors or threads grow,
//! if a message goes unanswered, or if the log warns. The hour-long form
//! is `cargo bench -p hearth-tests --bench soak`.

use hearth_tests::soak::{self, Options};

#[test]
fn five_minutes_of_traffic_leave_memory_fds_and_threads_flat() {
    let report = soak::run(&Options::from_env(300));
    report.print();
    let failures = report.failures();
    assert!(
        failures.is_empty(),
        "the soak failed:\n{}",
        failures.join("\n")
    );
}
