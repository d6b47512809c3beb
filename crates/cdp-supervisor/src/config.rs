//! Config. (contract skeleton)
