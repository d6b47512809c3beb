//! The bundled demo site. (contract skeleton)
