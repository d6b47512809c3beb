//! The message envelope. (contract skeleton)
