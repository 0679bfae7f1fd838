//! `partix run FILE` and the default demo.
//!
//! `partix run` loads and validates the module, finds (or builds) each partition's program,
//! runs the module executive on a SCHED_FIFO 99 thread pinned to the partitions' CPU, and prints
//! the end-of-run summary; `--trace FILE` writes the schedule trace for the Perfetto UI.
//!
//! Programs: `partix:Executable` paths with a `/` are used as given (relative to the config's
//! directory); bare names are looked up beside the `partix` binary, then in `PATH`; a `.c` file
//! is compiled on first use against the embedded APEX headers and `libpartix_apex.a` (found
//! beside `partix`) into a cache directory (`$XDG_CACHE_HOME/partix`, else `target/partix-cache`
//! beside the binary).
//!
//! Errors about the configuration (invalid, or naming a program or CPU this machine lacks) are
//! [`ConfigErrors`] located in the file, printed as `partix check` prints them.

use anyhow::{bail, Context};
use clap::Args;
use partix_config::model::Module;
use partix_config::{ConfigError, ConfigErrors};
use partix_runtime::executive::os::{
    allowed_cpus, check_cpus, no_such_program_file, pick_cpu, resolve_program, run_module,
    stop_on_signals, CpuError, Program, ProgramError, RunConfig, RunError, RunReport,
};
use partix_runtime::executive::{summary, Options, SwitchMechanism};
use partix_runtime::trace::Trace;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The demo module (examples/uav), embedded.
const DEMO_XML: &str = include_str!("../../../examples/uav/module.xml");
/// The demo's C partition, embedded.
const DEMO_OFP_C: &str = include_str!("../../../examples/uav/ofp.c");

/// Options shared by `partix run` and the demo. [`Default`] gives the command line's defaults.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct ExecOpts {
    /// CPU of the executive and (unless the config's partix:Affinity says otherwise) of the
    /// partitions (default: the last CPU).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Disable the kernel's RT throttling (/proc/sys/kernel/sched_rt_runtime_us = -1) for the
    /// run and restore it afterwards (needed when windows keep a SCHED_FIFO partition busy for
    /// more than 95 % of a second).
    #[arg(long)]
    pub rt_unthrottle: bool,
    /// Longest time the partitions may take to reach NORMAL, in milliseconds (at most a day).
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..=MAX_INIT_TIMEOUT_MS))]
    pub init_timeout_ms: u64,
    /// Do not print HM events and mode changes as they happen.
    #[arg(long)]
    pub quiet: bool,
    /// How partitions are kept off the CPU outside their windows: `gate` (futex gate, with the
    /// partition's cgroup frozen as the backstop; the default) or `signals` (SIGSTOP/SIGCONT).
    /// See docs/executive.md.
    #[arg(long, value_name = "gate|signals")]
    pub switch: Option<SwitchMechanism>,
    /// With the gate: wake this many µs before a point that opens a window and prepare the
    /// switch then (0: sleep to the point; default 100).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=MAX_OPTION_US))]
    pub lead_us: Option<u64>,
    /// With the gate's lead: carry out an opening point entirely at the early wake-up, the
    /// incoming partition holding itself until the planned start (`true`, the default), or
    /// pre-wake it and busy-wait for the point in the executive (`false`).
    #[arg(long, value_name = "true|false")]
    pub early_switch: Option<bool>,
    /// With the gate's lead: also wake this many µs before the lead's early wake-up, so that
    /// the early wake-up comes from a short idle (default 300; 0: off). See docs/executive.md.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=MAX_OPTION_US))]
    pub prewarm_us: Option<u64>,
    /// With the gate: a partition not parked this many µs after its window closed is held (its
    /// cgroup frozen, or SIGSTOP without one: the backstop; default 500).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_OPTION_US))]
    pub park_bound_us: Option<u64>,
    /// Leave the executive and the partitions dumpable (core dumps, a debugger of the same user),
    /// the partitions CAP_SYS_PTRACE and no Landlock domain. By default a partition cannot open
    /// the executive's or another partition's descriptors or memory through /proc
    /// (docs/ports.md, "Region isolation"); with this flag one without partix:User can.
    #[arg(long)]
    pub debuggable: bool,
}

/// Largest `--init-timeout-ms` (a day): the executive adds it to the clock.
pub const MAX_INIT_TIMEOUT_MS: u64 = 86_400_000;
/// Largest `--lead-us`, `--prewarm-us` and `--park-bound-us` (a second): the executive adds them
/// to planned times, and a value near `u64::MAX` overflowed that arithmetic (found by review).
pub const MAX_OPTION_US: u64 = 1_000_000;

impl Default for ExecOpts {
    /// The options of a command line that sets none (what `partix` with no arguments runs the
    /// demo with): clap's defaults, not the fields' zero values (an `init_timeout_ms` of 0 shut
    /// the demo down at once with INIT_TIMEOUT).
    fn default() -> ExecOpts {
        #[derive(clap::Parser)]
        struct NoFlags {
            #[command(flatten)]
            exec: ExecOpts,
        }
        <NoFlags as clap::Parser>::parse_from(["partix"]).exec
    }
}

/// Arguments of `partix run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The module configuration (ARINC_653_Module XML).
    pub file: PathBuf,
    /// Stop after this many major frames (default: run until Ctrl-C).
    #[arg(long)]
    pub frames: Option<u64>,
    /// Write the schedule trace (Chrome/Perfetto trace-event JSON) to this file after the run
    /// (a file already there is replaced only then).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Executive options.
    #[command(flatten)]
    pub exec: ExecOpts,
}

/// Arguments of `partix demo`.
#[derive(Args, Debug, Default)]
pub struct DemoArgs {
    /// Stop after this many major frames (default: about 3 seconds).
    #[arg(long)]
    pub frames: Option<u64>,
    /// Write the schedule trace (Chrome/Perfetto trace-event JSON) to this file.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Executive options.
    #[command(flatten)]
    pub exec: ExecOpts,
}

/// Run a module.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let module = load(&args.file)?;
    execute(&module, args.frames, args.trace.as_deref(), &args.exec)
}

/// Run the default demo module.
pub fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let dir = cache_dir()?.join("demo");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    write_if_changed(&dir.join("module.xml"), DEMO_XML)?;
    write_if_changed(&dir.join("ofp.c"), DEMO_OFP_C)?;
    let module = load(&dir.join("module.xml"))?;
    let frame = module
        .schedules
        .get(module.initial_schedule)
        .map_or(Duration::from_millis(80), |s| s.major_frame);
    let frames = args
        .frames
        .unwrap_or_else(|| (3_000_000_000 / frame.as_nanos().max(1)) as u64);
    eprintln!(
        "partix demo: module {} ({} partitions) for {frames} major frames; Ctrl-C ends it early",
        module.name,
        module.partitions.len()
    );
    execute(&module, Some(frames), args.trace.as_deref(), &args.exec)
}

/// Load and validate the module: its errors stay [`ConfigErrors`], which `main` prints as
/// `partix check` does.
fn load(path: &Path) -> anyhow::Result<Module> {
    Ok(partix_config::load(path)?)
}

/// The executive's options from the command line (unset flags keep [`Options::default`]).
fn exec_options(o: &ExecOpts, frames: Option<u64>, trace_capacity: usize) -> Options {
    let defaults = Options::default();
    Options {
        max_frames: frames,
        init_timeout: Duration::from_millis(o.init_timeout_ms),
        trace_capacity,
        log: !o.quiet,
        switch: o.switch.unwrap_or(defaults.switch),
        switch_lead: o
            .lead_us
            .map_or(defaults.switch_lead, Duration::from_micros),
        park_bound: o
            .park_bound_us
            .map_or(defaults.park_bound, Duration::from_micros),
        early_switch: o.early_switch.unwrap_or(defaults.early_switch),
        debuggable: o.debuggable,
        switch_prewarm: o
            .prewarm_us
            .map_or(defaults.switch_prewarm, Duration::from_micros),
        ..defaults
    }
}

fn execute(
    module: &Module,
    frames: Option<u64>,
    trace: Option<&Path>,
    o: &ExecOpts,
) -> anyhow::Result<ExitCode> {
    // The trace file is created first, under a temporary name beside it: a path that cannot be
    // written ends the command before any partition is built or started, and a trace already
    // there is replaced only when the run's trace is written.
    let trace = trace.map(TraceFile::create).transpose()?;
    let programs = programs(module, o.cpu)?;
    let frames_per_record = module
        .schedules
        .iter()
        .map(|s| s.windows.len() * 3 + 4)
        .max()
        .unwrap_or(8);
    let trace_capacity = frames
        .map_or(1 << 20, |f| {
            (f as usize)
                .saturating_add(2)
                .saturating_mul(frames_per_record)
                .saturating_add(1024)
        })
        .min(1 << 22);
    let cfg = RunConfig {
        programs,
        cpu: o.cpu,
        options: exec_options(o, frames, trace_capacity),
        rt_unthrottle: o.rt_unthrottle,
    };
    let stop = stop_on_signals();
    let module2 = module.clone();
    // The executive thread becomes SCHED_FIFO 99: give it a thread of its own.
    let report: RunReport = std::thread::Builder::new()
        .name("partix-executive".into())
        .spawn(move || run_module(&module2, cfg, stop))
        .context("cannot start the executive thread")?
        .join()
        .map_err(|_| anyhow::anyhow!("the executive thread panicked"))?
        .map_err(|e| match e {
            RunError::Affinity(e) => anyhow::Error::new(ConfigErrors::single(e)),
            e => anyhow::Error::new(e),
        })?;
    print!("{}", summary::render(&report));
    let hm_shutdown = report.end == partix_runtime::executive::EndReason::HmShutdown;
    if let Some(trace_file) = trace {
        let path = trace_file.path.clone();
        if let Err(e) = trace_file.finish(&report.trace) {
            // After an HM shutdown the exit status stays 3: that is what the run did.
            eprintln!(
                "partix: error: cannot write trace file {}: {e}",
                path.display()
            );
            return Ok(if hm_shutdown {
                ExitCode::from(3)
            } else {
                ExitCode::FAILURE
            });
        }
        println!(
            "trace: {} ({} records; open it at https://ui.perfetto.dev)",
            path.display(),
            report.trace.records().len()
        );
    }
    Ok(if hm_shutdown {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}

/// The `--trace` file while the run goes on: a new file with a temporary name in the same
/// directory, renamed over the path once the trace is written, and removed if the command ends
/// before that (so a failed run leaves a trace already at the path as it was).
struct TraceFile {
    path: PathBuf,
    tmp: PathBuf,
    file: Option<std::fs::File>,
}

impl TraceFile {
    /// Create the temporary file beside `path`.
    ///
    /// # Errors
    /// `path` is a directory, or its directory cannot take a new file.
    fn create(path: &Path) -> anyhow::Result<TraceFile> {
        let what = || format!("cannot create trace file {}", path.display());
        if path.is_dir() {
            bail!("{}: it is a directory", what());
        }
        let Some(name) = path.file_name() else {
            bail!("{}: no file name", what());
        };
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        // A new file (O_EXCL: never through a link someone left in a shared directory); a name
        // taken (by a run that was killed) gets the next one.
        let mut n = 0u32;
        loop {
            let tmp = dir.join(format!(
                ".{}.partix-{}-{n}.tmp",
                name.to_string_lossy(),
                std::process::id()
            ));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
            {
                Ok(file) => {
                    return Ok(TraceFile {
                        path: path.to_path_buf(),
                        tmp,
                        file: Some(file),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => n += 1,
                Err(e) => return Err(e).with_context(what),
            }
        }
    }

    /// Write `trace` and move it over the path.
    fn finish(mut self, trace: &Trace) -> std::io::Result<()> {
        let file = self.file.take().expect("finish is called once");
        trace.write_chrome_json(file)?;
        std::fs::rename(&self.tmp, &self.path)
    }
}

impl Drop for TraceFile {
    fn drop(&mut self) {
        // After `finish` renamed it there is nothing left to remove.
        let _ = std::fs::remove_file(&self.tmp);
    }
}

/// Where a partition's program comes from, found without building or starting anything.
pub enum ProgramSource {
    /// A C source (it exists) that `partix run` builds.
    C(PathBuf),
    /// A program to run as it is.
    Program(Program),
}

/// Find partition `p`'s program as `partix run` does, without building it: a `.c` source that
/// exists, or a program ([`resolve_program`]).
///
/// # Errors
/// The [`ProgramError`] located at `partix:Executable` (or at the `<Partition>` without one).
pub fn locate_program(module: &Module, p: usize) -> Result<ProgramSource, ProgramError> {
    if let Some(exe) = &module.partitions[p].executable {
        if exe.extension().is_some_and(|e| e == "c") {
            return match exe.is_file() {
                true => Ok(ProgramSource::C(exe.clone())),
                false => Err(no_such_program_file(module, p, exe)),
            };
        }
    }
    resolve_program(module, p).map(ProgramSource::Program)
}

/// Return what `partix run` refuses in `module` on any machine: a partition without
/// `partix:Executable`, an executable path or C source where there is no file. (A bare program
/// name not found beside `partix` or in `PATH` depends on the machine and is left to the run.)
pub fn program_errors(module: &Module) -> Vec<ConfigError> {
    (0..module.partitions.len())
        .filter_map(|p| match locate_program(module, p) {
            Ok(_) | Err(ProgramError::NotFound(_)) => None,
            Err(e) => Some(e.into_error()),
        })
        .collect()
}

/// The programs of `module` that `partix run` would not find on this machine: bare names found
/// neither beside `partix` nor in `PATH` (which `partix check` leaves to the machine that runs
/// the module: [`program_errors`] does not count them), each as `FILE:LINE:COL: message`.
pub fn programs_not_found_here(module: &Module) -> Vec<String> {
    (0..module.partitions.len())
        .filter_map(|p| match locate_program(module, p) {
            Err(ProgramError::NotFound(e)) => Some(format!(
                "{}:{}:{}: {}",
                e.file_display(),
                e.location.line,
                e.location.col,
                e.message
            )),
            _ => None,
        })
        .collect()
}

/// Check the CPUs (`--cpu`, `partix:Affinity`) and find every partition's program, building C
/// partitions, before anything starts.
///
/// # Errors
/// `--cpu` refused; or every located error ([`ConfigErrors`]): `partix:Affinity` naming a CPU
/// this process may not use, programs not found, C partitions that do not build (these are
/// built only when nothing else is wrong).
fn programs(module: &Module, cpu: Option<usize>) -> anyhow::Result<Vec<Program>> {
    let cpu = pick_cpu(cpu).map_err(anyhow::Error::msg)?;
    let mut errors = Vec::new();
    match check_cpus(module, cpu, &allowed_cpus()) {
        Ok(()) => {}
        Err(CpuError::Executive(m)) => bail!(m),
        Err(CpuError::Affinity(e)) => errors.push(e),
    }
    let sources: Vec<_> = (0..module.partitions.len())
        .map(|p| locate_program(module, p))
        .collect();
    let mut programs = Vec::with_capacity(sources.len());
    let located = errors.len() + sources.iter().filter(|s| s.is_err()).count();
    for (p, source) in sources.into_iter().enumerate() {
        let part = &module.partitions[p];
        match source {
            Err(e) => errors.push(e.into_error()),
            Ok(ProgramSource::Program(program)) => programs.push(program),
            Ok(ProgramSource::C(_)) if located > 0 => {}
            Ok(ProgramSource::C(src)) => match compile_c(&src) {
                Ok(path) => programs.push(Program {
                    path,
                    args: part.args.clone(),
                }),
                Err(e) => errors.push(module.error_at(
                    part.executable_location.unwrap_or(part.location),
                    format!(
                        "partition `{}`: cannot build {}: {}",
                        part.name,
                        src.display(),
                        e.what
                    ),
                    e.help,
                )),
            },
        }
    }
    match ConfigErrors::new(errors) {
        Some(errors) => Err(errors.into()),
        None => Ok(programs),
    }
}

/// Return the cache directory: `$XDG_CACHE_HOME/partix`, else `target/partix-cache` when the
/// binary runs from a cargo target directory, else `~/.cache/partix`.
fn cache_dir() -> anyhow::Result<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(x).join("partix"));
    }
    let exe = std::env::current_exe().context("cannot find the partix binary")?;
    if let Some(target) = exe
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "target"))
    {
        return Ok(target.join("partix-cache"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        return Ok(PathBuf::from(home).join(".cache/partix"));
    }
    Ok(std::env::temp_dir().join("partix-cache"))
}

fn write_if_changed(path: &Path, contents: &str) -> anyhow::Result<()> {
    if std::fs::read(path).ok().as_deref() != Some(contents.as_bytes()) {
        std::fs::write(path, contents)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Why a C partition could not be built: what went wrong and what to do.
#[derive(Debug)]
struct BuildError {
    what: String,
    help: String,
}

impl BuildError {
    fn new(what: impl Into<String>, help: impl Into<String>) -> BuildError {
        BuildError {
            what: what.into(),
            help: help.into(),
        }
    }
}

/// Compile a C partition against the APEX headers and `libpartix_apex.a`; cached by content.
///
/// # Errors
/// What failed (no library, the cache not writable, no `cc`, a compile error) and what to do.
fn compile_c(src: &Path) -> Result<PathBuf, BuildError> {
    const CACHE_HELP: &str = "make the cache directory writable, or set XDG_CACHE_HOME to one";
    let exe_dir = std::env::current_exe()
        .map_err(|e| {
            BuildError::new(
                format!("cannot find the partix binary: {e}"),
                "run partix from its file (not a deleted one)",
            )
        })?
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    // Beside `partix` (an install, or `cargo build --workspace`), in cargo's `deps/` (when
    // partix-apex was built as a dependency of partix), or where PARTIX_LIB_DIR says.
    let mut candidates = vec![
        exe_dir.join("libpartix_apex.a"),
        exe_dir.join("deps/libpartix_apex.a"),
    ];
    if let Some(dir) = std::env::var_os("PARTIX_LIB_DIR") {
        candidates.insert(0, PathBuf::from(dir).join("libpartix_apex.a"));
    }
    // PARTIX_LIB_DIR wins; otherwise the newest candidate (a library left by an older build
    // beside the binary must not shadow the one cargo just built into deps/).
    let newest = candidates
        .iter()
        .skip(usize::from(std::env::var_os("PARTIX_LIB_DIR").is_some()))
        .filter_map(|p| Some((std::fs::metadata(p).ok()?.modified().ok()?, p)))
        .max_by_key(|(t, _)| *t)
        .map(|(_, p)| p);
    let chosen = match std::env::var_os("PARTIX_LIB_DIR") {
        Some(_) if candidates[0].is_file() => Some(&candidates[0]),
        _ => newest,
    };
    let Some(lib) = chosen.cloned() else {
        return Err(BuildError::new(
            format!(
                "libpartix_apex.a not found (looked in {})",
                candidates
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "build it with `cargo build -p partix-apex` (same profile as partix) or set \
             PARTIX_LIB_DIR",
        ));
    };
    let source = std::fs::read(src).map_err(|e| {
        BuildError::new(
            format!("cannot read it: {e}"),
            "check the file's permissions; a relative path is resolved against the \
             configuration's directory",
        )
    })?;
    let cache = cache_dir().map_err(|e| BuildError::new(format!("{e:#}"), CACHE_HELP))?;
    // `include-<hash of the headers>`: partix builds with other headers use other directories,
    // so cc reads this build's headers only (review 27, finding 6).
    let include = partix_apex::c_headers::write_below(&cache).map_err(|e| {
        BuildError::new(
            format!(
                "cannot write the APEX headers to {}: {e}",
                partix_apex::c_headers::include_dir(&cache).display()
            ),
            CACHE_HELP,
        )
    })?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    source.hash(&mut h);
    for (name, text) in partix_apex::c_headers::FILES {
        name.hash(&mut h);
        text.hash(&mut h);
    }
    if let Ok(m) = std::fs::metadata(&lib) {
        m.len().hash(&mut h);
        m.modified().ok().hash(&mut h);
    }
    let stem = src
        .file_stem()
        .map_or("partition".into(), |s| s.to_string_lossy().into_owned());
    let out_dir = cache.join("c");
    std::fs::create_dir_all(&out_dir).map_err(|e| {
        BuildError::new(
            format!("cannot create {}: {e}", out_dir.display()),
            CACHE_HELP,
        )
    })?;
    let out = out_dir.join(format!("{stem}-{:016x}", h.finish()));
    // Mark what this run uses, and remove what no run has used for `CACHE_KEEP` (headers of
    // other partix versions, programs of older sources): the cache would otherwise grow by an
    // entry per version and per edit. Failures here cost nothing but disk space.
    touch(&include);
    prune_cache(&cache, &include, &out, std::time::SystemTime::now());
    if out.is_file() {
        touch(&out);
        return Ok(out);
    }
    // Per-process temporary name: two `partix run` may build the same partition at once. It is
    // removed whatever happens to the build (cc leaves a partial file when it fails late).
    let tmp = out.with_extension(format!("tmp{}", std::process::id()));
    let built = std::process::Command::new("cc")
        .arg("-O2")
        .arg("-I")
        .arg(&include)
        .arg(src)
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&tmp)
        .status()
        .map_err(|e| {
            BuildError::new(
                format!("cannot run `cc`: {e}"),
                "install a C compiler: apt-get install gcc",
            )
        })
        .and_then(|status| match status.success() {
            true => Ok(()),
            false => Err(BuildError::new(
                format!("cc failed ({status})"),
                "fix the errors cc printed above",
            )),
        })
        .and_then(|()| {
            std::fs::rename(&tmp, &out).map_err(|e| {
                BuildError::new(
                    format!("cannot store the program at {}: {e}", out.display()),
                    CACHE_HELP,
                )
            })
        });
    if built.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    built.map(|()| out)
}

/// How long an entry of the C build cache (an `include-<hash>` directory, a program in `c/`)
/// stays after its last use.
const CACHE_KEEP: Duration = Duration::from_secs(14 * 24 * 3600);

/// Set the modification time of `path` (a file or directory) to now: its last use.
fn touch(path: &Path) {
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

/// Remove the entries of the C build cache `cache` last used (modified) more than
/// [`CACHE_KEEP`] before `now`: `include-*` directories other than `keep_include`, and files
/// of `c/` other than `keep_program` (leftover temporary files too). Return how many went.
fn prune_cache(
    cache: &Path,
    keep_include: &Path,
    keep_program: &Path,
    now: std::time::SystemTime,
) -> usize {
    let old = |p: &Path| {
        std::fs::symlink_metadata(p)
            .and_then(|m| m.modified())
            .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age > CACHE_KEEP))
    };
    let mut removed = 0;
    if let Ok(dir) = std::fs::read_dir(cache) {
        for e in dir.flatten() {
            let p = e.path();
            let name = e.file_name();
            if name.to_string_lossy().starts_with("include-")
                && p != keep_include
                && e.file_type().is_ok_and(|t| t.is_dir())
                && old(&p)
                && std::fs::remove_dir_all(&p).is_ok()
            {
                removed += 1;
            }
        }
    }
    if let Ok(dir) = std::fs::read_dir(cache.join("c")) {
        for e in dir.flatten() {
            let p = e.path();
            if p != keep_program
                && e.file_type().is_ok_and(|t| t.is_file())
                && old(&p)
                && std::fs::remove_file(&p).is_ok()
            {
                removed += 1;
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn the_c_cache_keeps_what_was_used_lately_and_what_this_run_uses() {
        let cache = std::env::temp_dir().join(format!("partix-cache-prune-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&cache);
        let c = cache.join("c");
        std::fs::create_dir_all(&c).unwrap();
        let now = std::time::SystemTime::now();
        let long_ago = now - CACHE_KEEP - Duration::from_secs(3600);
        let lately = now - CACHE_KEEP + Duration::from_secs(3600);
        let make = |p: &Path, dir: bool, t: std::time::SystemTime| {
            if dir {
                std::fs::create_dir_all(p.join("arinc653")).unwrap();
                std::fs::write(p.join("arinc653/types.h"), "").unwrap();
            } else {
                std::fs::write(p, "").unwrap();
            }
            std::fs::File::open(p).unwrap().set_modified(t).unwrap();
        };
        let (inc_old, inc_lately, inc_used) = (
            cache.join("include-0000000000000001"),
            cache.join("include-0000000000000002"),
            cache.join("include-0000000000000003"),
        );
        make(&inc_old, true, long_ago);
        make(&inc_lately, true, lately);
        make(&inc_used, true, long_ago);
        let (prog_old, prog_lately, prog_used, tmp_old) = (
            c.join("ofp-0000000000000001"),
            c.join("ofp-0000000000000002"),
            c.join("ofp-0000000000000003"),
            c.join("ofp-0000000000000004.tmp42"),
        );
        make(&prog_old, false, long_ago);
        make(&prog_lately, false, lately);
        make(&prog_used, false, long_ago);
        make(&tmp_old, false, long_ago);
        // Something else in the cache is not the pruner's.
        let other = cache.join("notes.txt");
        make(&other, false, long_ago);
        assert_eq!(prune_cache(&cache, &inc_used, &prog_used, now), 3);
        for gone in [&inc_old, &prog_old, &tmp_old] {
            assert!(!gone.exists(), "{} still there", gone.display());
        }
        for kept in [&inc_lately, &inc_used, &prog_lately, &prog_used, &other] {
            assert!(kept.exists(), "{} removed", kept.display());
        }
        // A touch makes an entry recent.
        touch(&inc_used);
        assert!(std::fs::metadata(&inc_used).unwrap().modified().unwrap() >= now);
        std::fs::remove_dir_all(&cache).unwrap();
    }

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        exec: ExecOpts,
    }

    fn opts(args: &[&str]) -> Options {
        let cli = Cli::try_parse_from(std::iter::once("partix").chain(args.iter().copied()))
            .expect("valid arguments");
        exec_options(&cli.exec, Some(3), 100)
    }

    #[test]
    fn switch_flags_set_the_executive_options() {
        let o = opts(&[
            "--switch",
            "signals",
            "--lead-us",
            "0",
            "--park-bound-us",
            "800",
            "--early-switch",
            "false",
            "--prewarm-us",
            "300",
        ]);
        assert!(!o.early_switch);
        assert_eq!(o.switch_prewarm, Duration::from_micros(300));
        assert_eq!(o.switch, SwitchMechanism::Signals);
        assert_eq!(o.switch_lead, Duration::ZERO);
        assert_eq!(o.park_bound, Duration::from_micros(800));
        assert_eq!(o.max_frames, Some(3));
    }

    #[test]
    fn without_switch_flags_the_defaults_hold() {
        let o = opts(&[]);
        let d = Options::default();
        assert_eq!(o.switch, d.switch);
        assert_eq!(o.switch_lead, d.switch_lead);
        assert_eq!(o.park_bound, d.park_bound);
        assert_eq!(o.arm_ahead, d.arm_ahead);
        assert_eq!(o.early_switch, d.early_switch);
        assert!(d.early_switch);
    }

    #[test]
    fn an_unknown_switch_mechanism_is_refused() {
        let e = Cli::try_parse_from(["partix", "--switch", "freezer"])
            .err()
            .expect("refused");
        assert!(e.to_string().contains("use gate or signals"), "{e}");
    }
}
