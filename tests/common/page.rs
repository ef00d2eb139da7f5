//! The log inside a `bpflog report` page, read back as the page reads it.

/// The log's pieces (`<script type="application/deflate" class="bpflog-log">`): each one's first
/// row and rows, as the page inflates them (base64, raw deflate, a JSON array). Checks on the way that
/// a piece holds only base64 and says its first row and row count right.
pub fn pieces(html: &str) -> Vec<(u64, Vec<serde_json::Value>)> {
    let mut out: Vec<(u64, Vec<serde_json::Value>)> = Vec::new();
    for (first, rows, json) in piece_texts(html) {
        let rows_of: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
        let first: u64 = first.parse().unwrap();
        let before = out.last().map_or(0, |(f, r)| f + r.len() as u64);
        assert_eq!(first, before, "pieces follow each other");
        assert_eq!(rows_of.len(), rows.parse::<usize>().unwrap());
        out.push((first, rows_of));
    }
    out
}

/// Each piece's first row, row count and JSON text, inflated (base64, raw deflate), as written.
#[allow(dead_code)] // not every test file that includes the module calls it
pub fn piece_texts(html: &str) -> Vec<(&str, &str, String)> {
    use base64::Engine;
    use std::io::Read;
    let open = "<script type=\"application/deflate\" class=\"bpflog-log\" data-first=\"";
    let mut out = Vec::new();
    for piece in html.split(open).skip(1) {
        let (attrs, rest) = piece.split_once("\">").unwrap();
        let (first, rows) = attrs.split_once("\" data-rows=\"").unwrap();
        let b64 = rest.split("</script>").next().unwrap();
        assert!(
            b64.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b))
        );
        let packed = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        let mut json = String::new();
        flate2::read::DeflateDecoder::new(&packed[..])
            .read_to_string(&mut json)
            .unwrap();
        out.push((first, rows, json));
    }
    out
}

/// The log's lines as the page shows them: the text of every row of every piece.
pub fn shown_log(html: &str) -> Vec<String> {
    pieces(html)
        .into_iter()
        .flat_map(|(_, rows)| rows)
        .map(|row| match row {
            serde_json::Value::String(text) => text,
            serde_json::Value::Array(fields) => fields[0].as_str().unwrap().to_owned(),
            other => panic!("a row is a string or an array: {other}"),
        })
        .collect()
}
