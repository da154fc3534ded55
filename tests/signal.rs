//! Tests of the signal (being built).
