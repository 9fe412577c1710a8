//! The bucket reader's manifest (`runs --remote URL --fetch ID`): a manifest from a bucket
//! someone else can write. Properties: no panic; every file it says to fetch is a plain name or
//! `artifacts/<name>`, never the manifest, a dot name, an absolute path or a `..`.
//! (`cdp_evidence::Manifest::parse` is fuzzed by `evidence_manifest`; this is the other reader.)

#![no_main]

use cdp_relay::upload::fuzzing::listed_files;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let Some(files) = listed_files(&value) else {
        return;
    };
    for (path, _bytes) in files {
        let name = match path.split_once('/') {
            None => path.as_str(),
            Some((dir, name)) => {
                assert_eq!(dir, cdp_evidence::ARTIFACTS_DIR, "{path:?}");
                name
            }
        };
        assert!(path != cdp_evidence::MANIFEST_FILE, "{path:?}");
        assert!(
            !name.is_empty() && !name.contains(['/', '\\', '\0']),
            "{path:?}"
        );
        assert!(!name.starts_with('.'), "{path:?}");
        let p = std::path::Path::new(&path);
        assert!(p.is_relative() && p.components().count() <= 2, "{path:?}");
    }
});
