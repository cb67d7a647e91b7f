//! Issue 15: a hostile or broken client cannot hurt anyone else (this file: hostile_topics).
