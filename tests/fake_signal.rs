//! Tests of the fake_signal (being built).
