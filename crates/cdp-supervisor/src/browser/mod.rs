//! Finding and launching local Chromium. (contract skeleton)
