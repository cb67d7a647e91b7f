//! The classic file consume queue (being written).
