//! The canvas's group view in headless Chromium (written next).
