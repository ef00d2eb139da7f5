//! Prints the unindented lines of logs that classify as `Other`, to find kinds the classifier
//! misses: `cargo run -p bpflog-log --example unknown_lines -- LOG...`
use bpflog_log::{Line, classify, split_newline};
use std::io::BufRead;
fn main() {
    for path in std::env::args().skip(1) {
        let file = std::io::BufReader::new(std::fs::File::open(&path).expect("open"));
        for line in file.split(b'\n') {
            let line = line.expect("read");
            let (content, _) = split_newline(&line);
            if classify(content) == Line::Other && !content.starts_with(b" ") {
                println!("{}", String::from_utf8_lossy(content));
            }
        }
    }
}
