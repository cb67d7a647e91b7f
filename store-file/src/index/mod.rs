//! IndexFile: query by key and UNIQ_KEY (being written).
