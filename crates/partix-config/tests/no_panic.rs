//! Deterministic mutations of the example configurations never panic the pipeline, and whatever
//! it accepts satisfies the model's invariants. (The cargo-fuzz target `config_parse` explores
//! further; this test runs everywhere, without the fuzzer.)

use std::path::{Path, PathBuf};

use partix_config::model::Module;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn seeds() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = vec![root.join("../../examples/uav/module.xml")];
    for dir in ["tests/good", "tests/bad"] {
        let mut v: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "xml"))
            .collect();
        v.sort();
        paths.extend(v);
    }
    paths
        .into_iter()
        .map(|p| {
            let t = std::fs::read_to_string(&p).unwrap();
            (p, t)
        })
        .collect()
}

/// Check the invariants the runtime relies on.
fn check_invariants(m: &Module, input: &str) {
    if let Err(broken) = partix_config::invariants::check(m) {
        panic!("{broken}:\n{input}");
    }
    let _ = partix_config::summary(m);
}

fn run(input: &str, cases: &mut usize) {
    *cases += 1;
    let result = std::panic::catch_unwind(|| partix_config::parse_str(input, None));
    match result {
        Err(_) => panic!("parse_str panicked on:\n{input}"),
        Ok(Ok(m)) => check_invariants(&m, input),
        Ok(Err(errs)) => {
            for e in errs.iter() {
                assert!(
                    e.location.line >= 1 && e.location.col >= 1,
                    "unlocated: {e}\n{input}"
                );
                assert!(!e.help.is_empty(), "no help: {e}");
            }
        }
    }
}

/// Spans (start, end) of attribute values `="..."` in `text`.
fn value_spans(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut v = Vec::new();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'=' && b[i + 1] == b'"' {
            if let Some(len) = text[i + 2..].find('"') {
                v.push((i + 2, i + 2 + len));
                i += 2 + len;
            }
        }
        i += 1;
    }
    v
}

const VALUES: &[&str] = &[
    "",
    " ",
    "0",
    "-1",
    "1",
    "0x",
    "0xFFFFFFFF",
    "4294967296",
    "18446744073709551616",
    "0.0000000001",
    "99999999999999999999.5",
    "1e3",
    "NaN",
    "-0.0",
    ".",
    "0.08",
    "true",
    "LEVEL_Q",
    "SOURCE",
    "DESTINATION",
    "&amp;",
    "ü",
    "0,0",
    "one-sided",
];

#[test]
fn mutations_never_panic() {
    let mut cases = 0usize;
    let mut rng = Rng(0x005E_ED0F_9A27);
    let seeds = seeds();
    let main_seeds = &seeds[..seeds.len().min(4)];
    for (_, text) in &seeds {
        // Truncations: every 97th byte (at character boundaries).
        for cut in (0..text.len()).step_by(97) {
            if text.is_char_boundary(cut) {
                run(&text[..cut], &mut cases);
            }
        }
    }
    for (_, text) in main_seeds {
        // Truncations at every 11th byte of the main seeds.
        for cut in (0..text.len()).step_by(11) {
            if text.is_char_boundary(cut) {
                run(&text[..cut], &mut cases);
            }
        }
        // Byte flips to XML-significant ASCII characters.
        let bytes = text.as_bytes();
        for _ in 0..400 {
            let i = rng.below(bytes.len());
            if !bytes[i].is_ascii() {
                continue;
            }
            let mut m = bytes.to_vec();
            m[i] = b"<>\"'/=&;0-9.x :!?\n"[rng.below(18)];
            run(std::str::from_utf8(&m).unwrap(), &mut cases);
        }
        // Attribute values swapped with each other, or replaced by awkward ones.
        let spans = value_spans(text);
        for _ in 0..300 {
            let (s1, e1) = spans[rng.below(spans.len())];
            let replacement = if rng.below(2) == 0 {
                let (s2, e2) = spans[rng.below(spans.len())];
                text[s2..e2].to_string()
            } else {
                VALUES[rng.below(VALUES.len())].to_string()
            };
            let m = format!("{}{}{}", &text[..s1], replacement, &text[e1..]);
            run(&m, &mut cases);
        }
        // Lines deleted or duplicated.
        let lines: Vec<&str> = text.lines().collect();
        for i in 0..lines.len() {
            let mut del = lines.clone();
            del.remove(i);
            run(&del.join("\n"), &mut cases);
            let mut dup = lines.clone();
            dup.insert(i, lines[i]);
            run(&dup.join("\n"), &mut cases);
        }
    }
    // Pathological shapes.
    let deep = format!(
        "<ARINC_653_Module>{}{}</ARINC_653_Module>",
        "<Partition>".repeat(5000),
        "</Partition>".repeat(5000)
    );
    run(&deep, &mut cases);
    let wide = format!(
        "<ARINC_653_Module>{}</ARINC_653_Module>",
        "<Partition PartitionIdentifier=\"1\" EntryPoint=\"m\"/>".repeat(3000)
    );
    run(&wide, &mut cases);
    let long_name = format!(
        "<ARINC_653_Module><{0}/></ARINC_653_Module>",
        "X".repeat(100_000)
    );
    run(&long_name, &mut cases);
    run("", &mut cases);
    run("\u{feff}<ARINC_653_Module/>", &mut cases);
    eprintln!("{cases} cases");
    assert!(cases > 3000, "only {cases} cases");
}

/// Inputs whose naive checking would not finish (9 * 10^18 periods, quadratic help texts) complete.
#[test]
fn pathological_sizes_complete() {
    let xml = r#"<ARINC_653_Module>
  <Partition PartitionIdentifier="1" PartitionName="P" EntryPoint="main"/>
  <Module_Schedule MajorFrameSeconds="9000000000">
    <Partition_Schedule PartitionIdentifier="1" PeriodSeconds="0.000000001" PeriodDurationSeconds="0.000000001">
      <Window_Schedule WindowIdentifier="1" WindowStartSeconds="0" WindowDurationSeconds="9000000000"/>
    </Partition_Schedule>
  </Module_Schedule>
</ARINC_653_Module>"#;
    let m = partix_config::parse_str(xml, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.schedules[0].windows.len(), 1);
    let short = xml.replace(
        r#"WindowDurationSeconds="9000000000""#,
        r#"WindowDurationSeconds="4500000000""#,
    );
    let errs = partix_config::parse_str(&short, None).unwrap_err();
    assert!(
        errs.first().message.contains("period 4500000000000000000 "),
        "{errs}"
    );

    // Two million attributes on one element: refused by the pre-scan, before roxmltree's
    // duplicate-attribute check (quadratic: hours).
    let attrs: String = (0..2_000_000).map(|i| format!(" a{i}=''")).collect();
    let errs = partix_config::parse_str(&format!("<ARINC_653_Module{attrs}/>"), None).unwrap_err();
    assert!(
        errs.first().message.contains("more than 64 attributes"),
        "{errs}"
    );

    // Thousands of namespaces in scope, then elements that each declare one more: roxmltree
    // copies and checks the namespaces in scope at each (quadratic: 73 s for 131 KB). Refused
    // at the first declaration past the limit.
    let decls =
        |l: usize| -> String { (0..64).map(|k| format!(" xmlns:p{l}_{k}=\"u\"")).collect() };
    let opens: String = (0..62).map(|l| format!("<d{}>\n", decls(l))).collect();
    let closes = "</d>".repeat(62);
    let many = format!(
        "<ARINC_653_Module>\n{opens}{}{closes}</ARINC_653_Module>",
        "<e xmlns:z=\"u\"/>".repeat(4000)
    );
    let t0 = std::time::Instant::now();
    let errs = partix_config::parse_str(&many, None).unwrap_err();
    let e = errs.first();
    assert!(e.message.contains("more than 256 XML namespaces"), "{e}");
    // The 257th declaration: the first of the fifth <d> (four of 64 before it), line 6 column 4.
    assert_eq!((e.location.line, e.location.col), (6, 4), "{e}");
    eprintln!("namespaces refused in {:?}", t0.elapsed());

    // More nodes than roxmltree's limit: refused where the limit is passed (roxmltree only
    // says that it was).
    let comments = format!(
        "<ARINC_653_Module>\n{}</ARINC_653_Module>",
        "<!---->".repeat(1_100_000)
    );
    let errs = partix_config::parse_str(&comments, None).unwrap_err();
    let e = errs.first();
    assert!(e.message.contains("more than 1000000 XML nodes"), "{e}");
    // Nodes: the document, the root, the text "\n", then the comments: the 999998th is the
    // 1000001st node.
    assert_eq!(
        (e.location.line, e.location.col),
        (2, 7 * 999_997 + 1),
        "{e}"
    );
    // A million alternations of text and CDATA: roxmltree joins them into one text node,
    // copying the text so far at each join (quadratic: minutes).
    let cdata = format!(
        "<ARINC_653_Module>{}</ARINC_653_Module>",
        "x<![CDATA[y]]>".repeat(1_000_000)
    );
    let errs = partix_config::parse_str(&cdata, None).unwrap_err();
    assert!(
        errs.first().message.contains("pieces of text and CDATA"),
        "{errs}"
    );

    // Many channel ends naming unknown ports of a partition with 512 ports: no edit distance
    // to every port for every one (that took about 3 ms per end in a release build).
    let ports: String = (0..512)
        .map(|i| format!("<Sampling_Port Name=\"port_number_{i:05}\" MaxMessageSize=\"8\" Direction=\"SOURCE\" RefreshRateSeconds=\"1\"/>"))
        .collect();
    let channels: String = (0..20_000)
        .map(|i| format!("<Channel ChannelIdentifier=\"{}\"><Source><Standard_Partition PartitionIdentifier=\"1\" PortName=\"missing_{i:08}\"/></Source><Destination><Standard_Partition PartitionIdentifier=\"1\" PortName=\"port_number_{i:05}x\"/></Destination></Channel>", i + 1))
        .collect();
    let xml = format!("<ARINC_653_Module><Partition PartitionIdentifier=\"1\">{ports}</Partition><Connection_Table>{channels}</Connection_Table></ARINC_653_Module>");
    let errs = partix_config::parse_str(&xml, None).unwrap_err();
    // Two unknown ports per channel, and "no schedule".
    assert_eq!(errs.len(), 40_001, "{}", errs.first());

    // Many partitions, each with an HM table naming an unknown identifier.
    let n = 4000;
    let mut xml = String::from(
        "<ARINC_653_Module>\n<System_HM_Table><System_State_Entry SystemState=\"1\">\n",
    );
    for i in 0..n {
        xml.push_str(&format!(
            "<Error_ID_Level ErrorIdentifier=\"{i}\" ErrorCode=\"APPLICATION_ERROR\" ErrorLevel=\"PROCESS\"/>\n"
        ));
    }
    xml.push_str("</System_State_Entry></System_HM_Table>\n");
    for i in 0..n {
        xml.push_str(&format!(
            "<Partition PartitionIdentifier=\"{}\" EntryPoint=\"main\"/>\n<Partition_HM_Table PartitionIdentifier=\"{}\"><System_State_Entry SystemState=\"1\"><Error_ID_Action ErrorIdentifier=\"{}\" Action=\"IDLE\"/></System_State_Entry></Partition_HM_Table>\n",
            i + 1,
            i + 1,
            n + i
        ));
    }
    xml.push_str("</ARINC_653_Module>\n");
    let errs = partix_config::parse_str(&xml, None).unwrap_err();
    // One unknown identifier per table, plus "no schedule", plus every system entry but the
    // first giving APPLICATION_ERROR another identifier.
    assert_eq!(errs.len(), n + 1 + (n - 1));
    // The first MAX_REPORTED_ERRORS are kept (review 27), in file order: the system entries.
    assert_eq!(errs.errors().len(), partix_config::MAX_REPORTED_ERRORS);
    assert!(errs.iter().all(|e| e
        .message
        .contains("ErrorCode APPLICATION_ERROR is already given")
        || e.message.contains("no <Module_Schedule>")));
    assert!(
        errs.iter().all(|e| e.help.len() < 1000),
        "help texts are bounded"
    );
    // (The help of the unknown identifiers, "... and 3988 more" identifiers, is past the cap.)
    assert!(errs
        .to_string()
        .ends_with("... and 7800 more errors (fix the ones above first)"));
}

/// Parse `xml` and return its errors, within `budget` (the quadratic paths these inputs took cost
/// minutes: review 27).
fn errors_within(
    what: &str,
    xml: &str,
    budget: std::time::Duration,
) -> partix_config::ConfigErrors {
    let t0 = std::time::Instant::now();
    let r = partix_config::parse_str(xml, None);
    let took = t0.elapsed();
    eprintln!("{what}: {took:?}");
    assert!(took < budget, "{what} took {took:?}");
    r.expect_err(what)
}

/// Review 27, finding 1: a long namespace URI was compared whole at every element in its scope
/// (8 MiB × a million elements: minutes). It is refused at its declaration.
#[test]
fn a_long_namespace_uri_is_refused_at_its_declaration() {
    let uri = "A".repeat(8 << 20);
    let budget = std::time::Duration::from_secs(2);
    // The prefix partix bound to a wrong URI, and a million elements in its scope.
    let xml = format!(
        "<ARINC_653_Module xmlns:partix=\"urn:x:{uri}\">\n  <v:ext xmlns:v=\"urn:vendor\">{}</v:ext>\n</ARINC_653_Module>",
        "<a/>".repeat(999_990)
    );
    let errs = errors_within("long partix URI", &xml, budget);
    assert_eq!(errs.len(), 1, "{}", errs.first());
    let e = errs.first();
    assert!(
        e.message.contains("namespace URI longer than 1024 bytes"),
        "{e}"
    );
    assert_eq!((e.location.line, e.location.col), (1, 19), "{e}");
    assert!(e.to_string().len() < 400, "the URI is not echoed");
    // The default namespace, compared at each ARINC child.
    let xml = format!(
        "<ARINC_653_Module\n xmlns='urn:{uri}'><Partition PartitionIdentifier=\"1\">{}</Partition></ARINC_653_Module>",
        "<Process/>".repeat(800_000)
    );
    let errs = errors_within("long default URI", &xml, budget);
    let e = errs.first();
    assert!(
        e.message.contains("namespace URI longer than 1024 bytes"),
        "{e}"
    );
    assert_eq!((e.location.line, e.location.col), (2, 2), "{e}");
    // At the limit: accepted (and then reported as the wrong partix URI, shortened).
    let uri = "B".repeat(1024 - "urn:x:".len());
    let xml = format!("<ARINC_653_Module xmlns:partix=\"urn:x:{uri}\"/>");
    let errs = partix_config::parse_str(&xml, None).unwrap_err();
    let e = errs.first();
    assert!(e.message.contains("the prefix `partix` is bound to"), "{e}");
    assert!(e.message.len() < 250, "{e}");
    let xml = format!("<ARINC_653_Module xmlns:partix='urn:x:{uri}B'/>");
    let errs = partix_config::parse_str(&xml, None).unwrap_err();
    assert!(errs.first().message.contains("longer than 1024"), "{errs}");
}

/// Review 27, finding 2: on a line with a non-ASCII character, each location counted the
/// characters from the line's start; a one-line (minified) file was quadratic.
#[test]
fn locations_on_a_long_non_ascii_line_cost_linear_time() {
    let n = 100_000;
    let xml = format!(
        "<ARINC_653_Module ModuleName=\"é\"><Partition PartitionIdentifier=\"1\">{}</Partition></ARINC_653_Module>",
        "<Process Name=\"a\" StackSize=\"1\"/>".repeat(n)
    );
    let errs = errors_within(
        "one non-ASCII line",
        &xml,
        std::time::Duration::from_secs(4),
    );
    // No schedule, and no window for the partition; the columns count characters.
    assert!(errs.first().message.contains("Module_Schedule"), "{errs}");
    // The last value bad: its column counts the whole line.
    let at = xml.rfind("StackSize=\"1").unwrap() + "StackSize=\"".len();
    let bad = format!("{}x{}", &xml[..at], &xml[at + 1..]);
    let last_value = at;
    let errs = errors_within(
        "one non-ASCII line, the last value bad",
        &bad,
        std::time::Duration::from_secs(4),
    );
    let last = errs.iter().last().unwrap();
    // `é` is two bytes and one column.
    assert_eq!(
        (last.location.line, last.location.col as usize),
        (1, last_value),
        "{last}"
    );
}

/// Review 27, finding 3: the PartitionPeriodStart check compared each marked window with every
/// window of its partition (quadratic: a valid module with 130000 windows took minutes).
#[test]
fn many_period_start_windows_validate_in_linear_time() {
    let w = 40_000;
    let mut xml = format!(
        "<ARINC_653_Module><Partition PartitionIdentifier=\"1\"/>\n<Module_Schedule MajorFrameSeconds=\"{}\">\n<Partition_Schedule PartitionIdentifier=\"1\" PeriodSeconds=\".000001\" PeriodDurationSeconds=\".000000001\">\n",
        w as f64 / 1e6
    );
    for i in 0..w {
        // Window i at i µs, the first of its own 1 µs period.
        xml.push_str(&format!(
            "<Window_Schedule WindowIdentifier=\"{}\" WindowStartSeconds=\"{}.{:06}\" WindowDurationSeconds=\".000000001\" PartitionPeriodStart=\"1\"/>\n",
            i + 1,
            i / 1_000_000,
            i % 1_000_000
        ));
    }
    xml.push_str("</Partition_Schedule></Module_Schedule></ARINC_653_Module>\n");
    let t0 = std::time::Instant::now();
    let m = partix_config::parse_str(&xml, None).unwrap_or_else(|e| panic!("{}", e.first()));
    let took = t0.elapsed();
    eprintln!("{w} period-start windows: {took:?}");
    assert_eq!(m.schedules[0].windows.len(), w);
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
    // A window that is not the first of its period is still found.
    let bad = xml.replace(
        "WindowStartSeconds=\"0.000007\"",
        "WindowStartSeconds=\"0.0000065\"",
    );
    let errs = partix_config::parse_str(&bad, None).unwrap_err();
    assert!(
        errs.iter().any(|e| e.message.contains(
            "window 8 of `partition1` has PartitionPeriodStart=\"true\", but window 7 at 0.006 ms"
        )),
        "{errs}"
    );
}

/// Review 27, finding 6: every problem became an error, kept and printed: a 4 MB file of unknown
/// elements made a million of them (hundreds of MB of heap and of output). The first
/// MAX_REPORTED_ERRORS in file order are kept, the others counted and summed up in one line.
#[test]
fn the_errors_reported_are_capped_and_counted() {
    let n = 200_000;
    let xml = format!(
        "<ARINC_653_Module>\n{}</ARINC_653_Module>",
        "<a/>".repeat(n)
    );
    let errs = partix_config::parse_str(&xml, None).unwrap_err();
    let max = partix_config::MAX_REPORTED_ERRORS;
    assert_eq!(errs.len(), n);
    assert_eq!(errs.errors().len(), max);
    assert_eq!(errs.omitted(), n - max);
    // The first ones, in file order.
    for (i, e) in errs.iter().enumerate() {
        assert_eq!(
            (e.location.line, e.location.col as usize),
            (2, 4 * i + 1),
            "{e}"
        );
        assert!(e.message.contains("unknown element <a>"), "{e}");
    }
    let text = errs.to_string();
    assert_eq!(text.lines().count(), 2 * max + 1);
    assert_eq!(
        text.lines().last().unwrap(),
        format!("... and {} more errors (fix the ones above first)", n - max)
    );
    // Up to the cap, nothing changes.
    let xml = format!(
        "<ARINC_653_Module>\n{}</ARINC_653_Module>",
        "<a/>".repeat(max)
    );
    let errs = partix_config::parse_str(&xml, None).unwrap_err();
    assert_eq!((errs.len(), errs.omitted()), (max, 0));
    assert!(!errs.to_string().contains("more error"));
}
