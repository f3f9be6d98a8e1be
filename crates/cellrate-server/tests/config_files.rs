//! Config files: envoyproxy/ratelimit's format accepted as it is, and each mistake refused
//! with its file, line, key and message.

use cellrate_server::config::{Limit, Unit};
use cellrate_server::Config;

fn error(yaml: &str) -> String {
    match Config::from_files(&[("f.yaml", yaml)]) {
        Ok(_) => panic!("accepted: {yaml}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_reference_format_loads() {
    let yaml = r#"
domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 500
  - key: database
    value: default
    rate_limit: {unit: SECOND, requests_per_unit: 500, name: default}
  - key: remote_address
    detailed_metric: true
    value_to_metric: true
    share_threshold: false
    quota_mode: false
    metadata: {owner: team-a, tags: [x, y]}
    descriptors:
      - key: path
        value: 200
        shadow_mode: true
        rate_limit: {unit: day, requests_per_unit: 1000}
  - key: key4
    rate_limit: {unlimited: true}
  - key: week
    rate_limit: {unit: week, requests_per_unit: 7, burst: 2}
  - key: month
    rate_limit: {unit: month, requests_per_unit: 30}
  - key: year
    rate_limit: {unit: year, requests_per_unit: 365}
"#;
    let config = Config::from_files(&[("mongo.yaml", yaml)]).unwrap();
    let rules = config.rules();
    assert_eq!(rules.len(), 7);
    assert_eq!(rules[0].path, "mongo_cps.database_users");
    assert_eq!(rules[2].path, "mongo_cps.remote_address.path_200");
    assert!(rules[2].shadow);
    assert_eq!(rules[3].limit, Limit::Unlimited);
    let Limit::Bucket { quota, reported } = &rules[4].limit else {
        panic!()
    };
    assert_eq!(
        (quota.burst(), reported.requests_per_unit, reported.unit),
        (2, 7, Unit::Week)
    );
    assert_eq!(quota.emission_interval().as_secs(), 86_400);
    let Limit::Bucket { quota, .. } = &rules[5].limit else {
        panic!()
    };
    assert_eq!(quota.emission_interval().as_secs(), 86_400); // a MONTH is 30 days
    let Limit::Bucket { quota, .. } = &rules[6].limit else {
        panic!()
    };
    assert_eq!(quota.emission_interval().as_secs(), 86_400); // a YEAR is 365 days
}

#[test]
fn periods_are_reported_in_whole_units() {
    let yaml = "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {requests_per_unit: 10, per: 30s}\n  - key: b\n    rate_limit: {requests_per_unit: 1, per: 250ms}\n  - key: c\n    rate_limit: {requests_per_unit: 5, per: 7s}\n";
    let config = Config::from_files(&[("d.yaml", yaml)]).unwrap();
    let reported: Vec<(u32, Unit)> = config
        .rules()
        .iter()
        .map(|r| match &r.limit {
            Limit::Bucket { reported, .. } => (reported.requests_per_unit, reported.unit),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        reported,
        [(20, Unit::Minute), (4, Unit::Second), (432_000, Unit::Week)]
    );
}

/// Each mistake and the error it gets.
#[test]
fn mistakes_are_refused_with_position_and_message() {
    let cases: &[(&str, &str)] = &[
        ("domain: d\ndescriptors:\n  - key: a\n    ratelimit: {unit: second}\n",
         "f.yaml:4:5: unknown field `ratelimit`"),
        ("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requestsperunit: 5}\n",
         "f.yaml:4:32: unknown field `requestsperunit`"),
        ("domain: d\ndescriptors:\n  - key: a\n    0.25: x\n", "f.yaml:4:5: unknown field `0.25`"),
        ("domain: d\ndescriptors:\n  - just a string\n", "f.yaml:3:5:"),
        ("domain: \"\"\n", "f.yaml:1:9: domain: config file cannot have empty domain"),
        ("domain: d\ndescriptors:\n  - key: \"\"\n", "f.yaml:3:10: descriptors[0].key: descriptor has empty key"),
        ("domain: d\ndescriptors:\n  - key: a\n    value: v\n  - key: a\n    value: v\n",
         "f.yaml:5:5: descriptors[1]: duplicate descriptor composite key 'd.a_v'"),
        ("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n",
         "f.yaml:4:24: descriptors[0].rate_limit.unit: invalid rate limit unit 'fortnight'"),
        ("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {requests_per_unit: 1}\n",
         "f.yaml:4:17: descriptors[0].rate_limit: invalid rate limit unit ''"),
        ("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unlimited: true, unit: second}\n",
         "descriptors[0].rate_limit.unit: should not specify rate limit unit when unlimited"),
        ("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, replaces: [{name: \"\"}]}\n",
         "descriptors[0].rate_limit.replaces[0]: should not have an empty replaces entry"),
        ("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {name: n, unit: second, requests_per_unit: 1, replaces: [{name: n}]}\n",
         "replaces should not contain name of same descriptor"),
        ("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: -1}\n",
         "f.yaml:4:51: invalid u32"),
        ("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, burst: 0}\n",
         "descriptors[0].rate_limit.burst: burst must be at least 1"),
        ("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {per: 30s, unit: second, requests_per_unit: 1}\n",
         "give either unit or per, not both"),
        ("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {per: soon, requests_per_unit: 1}\n",
         "descriptors[0].rate_limit.per: invalid period 'soon'"),
        ("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {per: 13s, requests_per_unit: 1}\n",
         "no unit (second to year) holds a whole number of periods of '13s'"),
        ("domain: d\ndescriptors:\n  - key: a\n    quota_mode: true\n", "quota_mode is not supported"),
        ("domain: d\ndescriptors: [\n", "f.yaml:2:14:"),
    ];
    for (yaml, want) in cases {
        let got = error(yaml);
        assert!(got.contains(want), "{yaml}\ngot:  {got}\nwant: {want}");
    }
}

#[test]
fn two_files_of_one_domain_are_refused() {
    let a = "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1}\n";
    let e = Config::from_files(&[("a.yaml", a), ("b.yaml", a)])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("b.yaml:1:9: domain: duplicate domain 'd' in config file (also in a.yaml)"),
        "{e}"
    );
}

#[test]
fn every_error_of_a_directory_is_reported() {
    let dir = crate::support::TempDir::new("validate");
    dir.write("a.yaml", "domain: a\ndescriptors:\n  - key: \"\"\n  - key: b\n    rate_limit: {unit: x, requests_per_unit: 1}\n");
    dir.write("b.yml", "domain: b\nbogus: 1\n");
    dir.write("notes.txt", "not a config");
    dir.write(".hidden.yaml", "not: a config");
    let errors = Config::load_dir(&dir.0).unwrap_err();
    assert_eq!(errors.0.len(), 3, "{errors}");
    // The binary's --validate prints them and exits 1.
    let out = crate::support::binary()
        .arg("--validate")
        .arg(&dir.0)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("a.yaml:3:10: descriptors[0].key: descriptor has empty key"),
        "{text}"
    );
    assert!(text.contains("b.yml:2:1: unknown field `bogus`"), "{text}");
}

#[test]
fn files_of_one_domain_merge_when_asked() {
    let a = "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1}\n";
    let b = "domain: d\ndescriptors:\n  - key: b\n    rate_limit: {unit: second, requests_per_unit: 2}\n";
    let config = Config::from_files_merging(&[("a.yaml", a), ("b.yaml", b)], true).unwrap();
    let paths: Vec<&str> = config.rules().iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["d.a", "d.b"]);
    let e = Config::from_files_merging(&[("a.yaml", a), ("c.yaml", a)], true)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("c.yaml:3:5: descriptors[0]: duplicate descriptor composite key 'd.a'"),
        "{e}"
    );
}
