use super::*;

fn scan(s: &str) -> Scan {
    let mut sc = Scan::default();
    // Fed in small pieces, as an over-long line arrives.
    for chunk in s.as_bytes().chunks(3) {
        sc.feed(chunk);
    }
    sc
}

#[test]
fn the_scan_finds_the_id_wherever_it_is_and_nothing_nested() {
    let s = scan(
        r#"{"result":{"content":[{"type":"text","text":"x\"id\":9, \"id\": 8"}],"id":7},"jsonrpc":"2.0","id":42}"#,
    );
    assert_eq!(s.id(), Some(RequestId::Number(42)));
    let s = scan(
        r#"{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"arguments":{"name":"no"},"name":"evaluate_script"}}"#,
    );
    assert_eq!(s.id(), Some(RequestId::String("a\"b".into())));
    assert_eq!(s.method().as_deref(), Some("tools/call"));
    assert_eq!(s.name().as_deref(), Some("evaluate_script"));
    // A number at the very end of the input.
    assert_eq!(scan(r#"{"id":-17"#).id(), Some(RequestId::Number(-17)));
    // Notifications have none; garbage finds nothing and does not panic.
    assert_eq!(
        scan(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#).id(),
        None
    );
    for junk in [
        "",
        "}}}]]]",
        "[[[[[[",
        "\"\\",
        "{\"id\":[1]}",
        "{\"id\":{\"id\":1}}",
    ] {
        assert_eq!(scan(junk).id(), None, "{junk}");
    }
}

#[tokio::test]
async fn lines_over_the_limit_are_dropped_and_counted_without_being_held() {
    let mut input = Vec::new();
    input.extend_from_slice(b"short\n");
    input.extend_from_slice(br#"{"jsonrpc":"2.0","result":{"text":""#);
    input.extend(std::iter::repeat_n(b'x', 100_000));
    input.extend_from_slice(b"\"},\"id\":5}\n");
    input.extend_from_slice(b"last without newline");
    let mut lines = Lines::new(&input[..], 1024, false);
    assert!(matches!(lines.next().await.unwrap(), Next::Line));
    assert_eq!(lines.line(), b"short");
    match lines.next().await.unwrap() {
        Next::Over { bytes, scan } => {
            assert_eq!(bytes, 100_000 + 45);
            assert_eq!(scan.unwrap().id(), Some(RequestId::Number(5)));
        }
        other => panic!("{other:?}"),
    }
    assert!(lines.buf.capacity() <= 2048, "the long line was not held");
    assert!(matches!(lines.next().await.unwrap(), Next::Line));
    assert_eq!(lines.line(), b"last without newline");
    assert!(matches!(lines.next().await.unwrap(), Next::Eof));

    // Keeping the head (stderr): the first bytes stay, the rest is counted.
    let long = vec![b'y'; 50_000];
    let mut lines = Lines::new(&long[..], 100, true);
    match lines.next().await.unwrap() {
        Next::Over { bytes, scan: None } => assert_eq!(bytes, 50_000),
        other => panic!("{other:?}"),
    }
    assert_eq!(lines.line().len(), 100);
}
