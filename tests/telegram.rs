//! Tests of the telegram (being built).
