//! `--secret-env NAME`, the same for every command: the variable must be set, valid UTF-8 and not
//! empty or blank, else the command refuses to start with a one-line usage error. A secret that
//! silently protects nothing is worse than no flag.

use crate::args::Usage;

/// Reads each named variable; the values never appear in an error.
pub(crate) fn from_env(names: &[String]) -> Result<Vec<(String, String)>, Usage> {
    names
        .iter()
        .map(|name| read(name, std::env::var_os(name)))
        .collect()
}

fn read(name: &str, value: Option<std::ffi::OsString>) -> Result<(String, String), Usage> {
    let value = value.ok_or_else(|| {
        Usage(format!(
            "--secret-env {name}: environment variable {name} is not set; export it first"
        ))
    })?;
    let value = value.into_string().map_err(|_| {
        Usage(format!(
            "--secret-env {name}: the value of {name} is not valid UTF-8"
        ))
    })?;
    if value.trim().is_empty() {
        return Err(Usage(format!(
            "--secret-env {name}: environment variable {name} is empty; export a value first"
        )));
    }
    Ok((name.to_owned(), value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_empty_and_blank_are_refused_without_echoing_values() {
        assert!(read("A", None).unwrap_err().0.contains("not set"));
        assert!(read("A", Some("".into())).unwrap_err().0.contains("empty"));
        assert!(read("A", Some(" \t".into()))
            .unwrap_err()
            .0
            .contains("empty"));
        let (n, v) = read("A", Some("hunter22".into())).unwrap();
        assert_eq!((n.as_str(), v.as_str()), ("A", "hunter22"));
        use std::os::unix::ffi::OsStringExt;
        let bad = std::ffi::OsString::from_vec(vec![0xff, b's', b'3', b'c']);
        let e = read("A", Some(bad)).unwrap_err().0;
        assert!(e.contains("UTF-8") && !e.contains("s3c"), "{e}");
    }
}
