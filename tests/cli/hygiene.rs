//! Nothing outlives semcheck and nothing is left behind (issue 26): the script of a
//! kernel file runs in a process group of its own, ended with everything it started on
//! every end of semcheck (a normal end, a budget stop, `SIGINT`, `SIGTERM`, `SIGHUP`),
//! a process that left the group (a daemon) included, which the memory budget counts too;
//! creating the managed environment is ended the same way and leaves no temporary
//! folder; the temporary folders of a run killed outright are removed by the next run;
//! a script that dies by a signal or by `os._exit` gets a sentence that says so.

use crate::common::{repo, semcheck_cmd, temp_dir, within_moments};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Whether process `pid` is gone (or a zombie nobody has reaped yet: it runs nothing).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat[stat.rfind(')').unwrap() + 1..].trim_start().starts_with('Z'),
    }
}

/// Waits up to `secs` for `path` to hold a pid; returns it.
fn pid_in(path: &Path, secs: u64) -> Option<u32> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(secs) {
        if let Some(pid) = std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse().ok()) {
            return Some(pid);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// Asserts that the process whose pid `pid_file` holds (written within 1 s) is gone
/// within 3 s; `whose` says whose child it was.
fn assert_child_ends(pid_file: &Path, whose: &str) {
    let child = pid_in(pid_file, 1).unwrap_or_else(|| panic!("{whose} did not start its child"));
    assert!(ends(child), "{whose}'s child {child} outlived semcheck");
}

/// Waits up to 3 s for `pid` to be gone.
fn ends(pid: u32) -> bool {
    within_moments(|| gone(pid))
}

/// A kernel script in `dir` that starts `sleep 120` in the background, writes its pid to
/// `child.pid`, then runs `rest`. Returns (script, pid file).
fn spawning_script(dir: &Path, rest: &str) -> (PathBuf, PathBuf) {
    spawning_script_with(dir, "", rest)
}

/// [`spawning_script`] whose `subprocess.Popen` gets the keyword arguments `popen`
/// (`start_new_session=True`).
fn spawning_script_with(dir: &Path, popen: &str, rest: &str) -> (PathBuf, PathBuf) {
    let pid_file = dir.join("child.pid");
    let script = dir.join("spawner.py");
    std::fs::write(
        &script,
        format!(
            "import subprocess\np = subprocess.Popen(['sleep', '120'], {popen})\nopen({:?}, 'w').write(str(p.pid))\n{rest}\n",
            pid_file.display().to_string()
        ),
    )
    .unwrap();
    (script, pid_file)
}

#[test]
fn sigterm_sighup_and_sigint_end_the_script_and_the_process_it_started() {
    for signal in ["TERM", "HUP", "INT"] {
        let dir = temp_dir(&format!("hygiene-{signal}"));
        let (script, pid_file) = spawning_script(&dir, "import time\ntime.sleep(60)");
        let mut semcheck = semcheck_cmd()
            .args(["check", script.to_str().unwrap(), "--devices", "2"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let child = pid_in(&pid_file, 60).expect("the script started its child");
        let killed = Command::new("kill").args([&format!("-{signal}"), &semcheck.id().to_string()]).status().unwrap();
        assert!(killed.success());
        let start = Instant::now();
        let status = semcheck.wait().unwrap();
        assert!(start.elapsed() < Duration::from_secs(5), "SIG{signal} took {:?}", start.elapsed());
        assert_eq!(status.code(), Some(3), "SIG{signal}");
        let mut out = String::new();
        std::io::Read::read_to_string(&mut semcheck.stdout.take().unwrap(), &mut out).unwrap();
        assert!(out.contains("stopped by an interrupt"), "SIG{signal}: {out}");
        assert!(ends(child), "SIG{signal}: the script's child {child} outlived semcheck");
    }
}

#[test]
fn semcheck_killed_outright_takes_the_script_and_its_process_with_it() {
    // SIGKILL cannot be handled by semcheck: the export server sees that its parent is
    // gone and ends the script's worker, and with it what the script started.
    let dir = temp_dir("hygiene-KILL");
    let script_pid = dir.join("script.pid");
    let (script, pid_file) = spawning_script(
        &dir,
        &format!(
            "import os, time\nopen({:?}, 'w').write(str(os.getpid()))\ntime.sleep(60)",
            script_pid.display().to_string()
        ),
    );
    let mut semcheck = semcheck_cmd()
        .args(["check", script.to_str().unwrap(), "--devices", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let child = pid_in(&pid_file, 60).expect("the script started its child");
    let script_process = pid_in(&script_pid, 10).expect("the script wrote its pid");
    semcheck.kill().unwrap();
    semcheck.wait().unwrap();
    assert!(ends(script_process), "the script's process {script_process} outlived semcheck killed outright");
    assert!(ends(child), "the script's child {child} outlived semcheck killed outright");
}

#[test]
fn a_script_that_ends_leaves_no_process_behind() {
    // The script ends normally, its background child still running: the group is ended.
    let dir = temp_dir("hygiene-normal");
    let (script, pid_file) = spawning_script(&dir, "");
    let out = semcheck_cmd().args(["check", script.to_str().unwrap(), "--devices", "2"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "no kernel: {}", String::from_utf8_lossy(&out.stderr));
    assert_child_ends(&pid_file, "the script");
}

#[test]
fn a_process_that_leaves_its_group_is_ended_with_semcheck_and_counted_in_its_memory_budget() {
    // A child in a session of its own (`start_new_session`, `setsid`) outlives the
    // script's group; semcheck, a subreaper, becomes its parent and ends it too.
    let dir = temp_dir("hygiene-session");
    let (script, pid_file) = spawning_script_with(&dir, "start_new_session=True", "");
    let out = semcheck_cmd().args(["check", script.to_str().unwrap(), "--devices", "2"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "no kernel: {}", String::from_utf8_lossy(&out.stderr));
    assert_child_ends(&pid_file, "the script");

    // A daemon (forked twice, in a session of its own, its parent gone) that holds 1.5 GB
    // counts towards the memory budget, and is ended when the budget stops semcheck.
    let dir = temp_dir("hygiene-daemon");
    let pid_file = dir.join("daemon.pid");
    let script = dir.join("daemon.py");
    std::fs::write(
        &script,
        format!(
            "import os, time\n\
             if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n\
             \x20       open({:?}, 'w').write(str(os.getpid()))\n\
             \x20       b = bytearray(1500 << 20)\n\
             \x20       for i in range(0, len(b), 4096): b[i] = 1\n\
             \x20       time.sleep(120)\n\
             \x20   os._exit(0)\n\
             time.sleep(30)\n",
            pid_file.display().to_string()
        ),
    )
    .unwrap();
    let out = semcheck_cmd()
        .args(["check", script.to_str().unwrap(), "--devices", "2", "--max-memory-mib", "1000"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("stopped by the memory budget of 1000 MiB while running the script"), "{text}");
    let daemon = pid_in(&pid_file, 1).expect("the script started its daemon");
    assert!(ends(daemon), "the daemon {daemon} outlived semcheck");
}

#[test]
fn supervise_passes_the_program_s_end_on_and_ends_what_it_started() {
    use std::os::unix::process::ExitStatusExt;
    // The Python API's exports run under `semcheck supervise`: the program's exit code...
    let out = semcheck_cmd().args(["supervise", "--", "sh", "-c", "exit 5"]).output().unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", String::from_utf8_lossy(&out.stderr));
    // ...or the signal that killed it, raised again (no core file written).
    let dir = temp_dir("supervise");
    let out = semcheck_cmd().args(["supervise", "--", "sh", "-c", "kill -SEGV $$"]).current_dir(&dir).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{err}");
    assert!(err.contains("semcheck: sh was killed by signal 11 (SIGSEGV)"), "{err}");
    assert!(std::fs::read_dir(&dir).unwrap().next().is_none(), "a file was written (a core file?)");
    // A budget stops it with exit 3 and one line; a daemon it started is ended too.
    let pid_file = dir.join("daemon.pid");
    let script = format!("(setsid sleep 120 & echo $! > {}); sleep 60", pid_file.display());
    let start = Instant::now();
    let out = semcheck_cmd()
        .args(["supervise", "--max-seconds", "1", "--doing", "tracing run at N = 2", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
    assert!(
        err.contains("semcheck: sh: incomplete: stopped by the time budget of 1 s while tracing run at N = 2"),
        "{err}"
    );
    assert_child_ends(&pid_file, "the supervised program");
    // The caller killed outright: supervise ends the program and what it started.
    let pid_file = dir.join("program.pid");
    let inner = format!("echo $$ > {}; exec sleep 120", pid_file.display());
    let caller = Command::new("sh")
        .args(["-c", r#"$0 supervise -- sh -c "$1" & sleep 1; kill -KILL $$"#])
        .arg(env!("CARGO_BIN_EXE_semcheck"))
        .arg(&inner)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(caller.signal(), Some(libc::SIGKILL));
    assert_child_ends(&pid_file, "supervise (its caller killed)");
    // An internal command: not listed by --help.
    let help = semcheck_cmd().arg("--help").output().unwrap();
    assert!(!String::from_utf8_lossy(&help.stdout).contains("supervise"));
}

#[test]
fn a_script_killed_by_a_signal_or_ended_by_os_exit_is_described_in_words() {
    let dir = temp_dir("hygiene-words");
    let cases = [
        ("segv.py", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)", "killed by signal 11 (SIGSEGV)"),
        ("exit0.py", "import os\nos._exit(0)", "ended (exit 0) without reporting its kernels"),
        ("exit7.py", "import os\nos._exit(7)", "ended (exit 7) without reporting its kernels"),
    ];
    for (name, body, words) in cases {
        let script = dir.join(name);
        std::fs::write(&script, body).unwrap();
        let out = semcheck_cmd().args(["check", script.to_str().unwrap(), "--devices", "2"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(words), "{name}: `{err}` should say `{words}`");
        assert!(!err.contains("Some(") && !err.contains("None"), "{name}: {err}");
        assert!(!err.contains(":\n\n") && !err.trim_end().ends_with(':'), "{name}: a blank tail: {err}");
    }
}

#[test]
fn a_script_that_replaces_json_s_functions_is_still_read_and_a_front_end_failure_is_not_called_a_kill() {
    let dir = temp_dir("hygiene-json");
    let seed = std::fs::read_to_string(repo().join("protocols/pallas/ppermute.py")).unwrap();
    let patched = |patch: &str| seed.replacen("import jax\n", &format!("import jax\n{patch}\n"), 1);
    // The front end writes its document and its answers with functions bound before the
    // script ran.
    let script = dir.join("replaces_json.py");
    std::fs::write(&script, patched("import json\njson.dumps = json.loads = json.dump = None")).unwrap();
    let out = semcheck_cmd().args(["check", script.to_str().unwrap(), "--devices", "2"]).output().unwrap();
    let (stdout, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{err}");
    assert!(stdout.contains("N=2: PROVED"), "{stdout}");
    // A script that breaks the front end's own modules makes both the export and its
    // worker fail: said as the front end's failure with its exit code, not as a kill (the
    // worker's group is ended only once it has had a moment to exit by itself).
    let script = dir.join("breaks_the_front_end.py");
    let broken = "import sys\nfor m in ('semcheck.frontend.__main__', 'semcheck.frontend.worker'):\n    \
                  sys.modules[m].dumps = None";
    std::fs::write(&script, patched(broken)).unwrap();
    let out = semcheck_cmd().args(["check", script.to_str().unwrap(), "--devices", "2"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the Python front end failed on ") && err.contains("(exit 1)"), "{err}");
    assert!(!err.contains("signal"), "{err}");
}

/// A stand-in for `python3` that says it is Python 3.12 when asked, makes a "virtual
/// environment" (a copy of itself as `bin/python`) at once, and hangs in `pip install`
/// with a child of its own, whose pid it writes to `$SEMCHECK_TEST_MARK`.
fn fake_bootstrap(dir: &Path) -> PathBuf {
    let fake = dir.join("fake-python3");
    std::fs::write(
        &fake,
        "#!/bin/sh\nif [ \"$1\" = -I ]; then echo '{\"python\": \"3.12.0\", \"jax\": null, \"jaxlib\": null, \
         \"semcheck\": null}'; exit 0; fi\n\
         if [ \"$2\" = venv ]; then mkdir -p \"$3/bin\"; cp \"$0\" \"$3/bin/python\"; exit 0; fi\n\
         sleep 120 &\necho $! > \"$SEMCHECK_TEST_MARK\"\nwait\n",
    )
    .unwrap();
    let _ = Command::new("chmod").arg("+x").arg(&fake).status();
    fake
}

fn managed_env_command(cache: &Path, fake: &Path, mark: &Path, script: &Path) -> Command {
    let mut cmd = semcheck_cmd();
    cmd.args(["check", script.to_str().unwrap(), "--devices", "2"])
        .env("SEMCHECK_PYTHON", "managed")
        .env("SEMCHECK_CACHE_DIR", cache)
        .env("SEMCHECK_BOOTSTRAP_PYTHON", fake)
        .env("SEMCHECK_TEST_MARK", mark)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// The names under `dir` that start with `.python-` (temporary environments and their
/// lock files).
fn temporary_envs(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|all| {
            all.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".python-"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_stopped_environment_creation_leaves_no_process_and_no_folder_and_a_killed_one_is_swept() {
    let dir = temp_dir("hygiene-venv");
    let cache = dir.join("cache");
    let fake = fake_bootstrap(&dir);
    let mark = dir.join("pip.pid");
    let script = dir.join("k.py");
    std::fs::write(&script, "pass\n").unwrap();

    // SIGTERM while "pip" runs: pip's child ends, the temporary folder goes.
    let semcheck = managed_env_command(&cache, &fake, &mark, &script).spawn().unwrap();
    let pip_child = pid_in(&mark, 30).expect("the environment's creation reached pip");
    assert!(!temporary_envs(&cache).is_empty(), "a temporary environment is being made");
    Command::new("kill").args(["-TERM", &semcheck.id().to_string()]).status().unwrap();
    let signalled = Instant::now();
    let out = semcheck.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    // Ended by the signal (after the watchdog's grace period), not by pip's end 120 s on,
    // and reported under the file's name.
    assert!(signalled.elapsed() < Duration::from_secs(60), "SIGTERM took {:?}", signalled.elapsed());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("k.py: INCOMPLETE") && text.contains("stopped by an interrupt"), "{text}");
    assert!(ends(pip_child), "pip's child {pip_child} outlived semcheck");
    assert_eq!(temporary_envs(&cache), Vec::<String>::new(), "left in {}", cache.display());

    // SIGKILL cannot be handled: the folder stays, and the next run removes it.
    let _ = std::fs::remove_file(&mark);
    let mut semcheck = managed_env_command(&cache, &fake, &mark, &script).spawn().unwrap();
    let pip_child = pid_in(&mark, 30).expect("the environment's creation reached pip");
    let killed_pid = semcheck.id();
    semcheck.kill().unwrap();
    semcheck.wait().unwrap();
    let left = temporary_envs(&cache);
    assert!(left.iter().any(|n| n.starts_with(&format!(".python-{killed_pid}-"))), "{left:?}");
    // What SIGKILL left running is beyond any process's reach but the test's.
    let _ = Command::new("kill").args(["-KILL", &pip_child.to_string()]).status();
    let _ = std::fs::remove_file(&mark);
    let mut again = managed_env_command(&cache, &fake, &mark, &script).spawn().unwrap();
    let pip_child = pid_in(&mark, 30).expect("the next run creates the environment again");
    let now = temporary_envs(&cache);
    assert!(!now.iter().any(|n| n.starts_with(&format!(".python-{killed_pid}-"))), "not swept: {now:?}");
    again.kill().unwrap();
    again.wait().unwrap();
    let _ = Command::new("kill").args(["-KILL", &pip_child.to_string()]).status();
}

#[test]
fn a_budget_stop_leaves_no_export_file_and_stale_ones_are_swept() {
    // The export files of a run live in a folder of its own, removed at every exit; a
    // run removes the folders of killed runs and the loose files of older semcheck
    // versions whose process is gone.
    let exports = semcheck::frontend::env::cache_dir().unwrap().join("exports");
    std::fs::create_dir_all(&exports).unwrap();
    let loose = exports.join("2147483646-0123456789abcdef-2.json");
    std::fs::write(&loose, "{}").unwrap();
    let killed = exports.join("run-2147483646-0123456789abcdef");
    std::fs::create_dir_all(&killed).unwrap();
    let dir = temp_dir("hygiene-exports");
    let script = dir.join("hang.py");
    std::fs::write(&script, "import time\ntime.sleep(30)\n").unwrap();
    let semcheck = semcheck_cmd()
        // Long enough for the export to start on a loaded machine (the sweep comes with it).
        .args(["check", script.to_str().unwrap(), "--devices", "2", "--max-seconds", "8"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = semcheck.id();
    let out = semcheck.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let mine: Vec<String> = std::fs::read_dir(&exports)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("run-{pid}-")))
        .collect();
    assert_eq!(mine, Vec::<String>::new(), "left in {}", exports.display());
    assert!(!loose.exists() && !killed.exists(), "stale exports not swept");
}

#[test]
fn an_interpreter_that_floods_leaves_a_child_or_never_answers_is_described_and_ended() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("hygiene-probe");
    let script = |name: &str, body: &str| {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    };
    // Asked to describe itself, it prints without end: read up to a cap, then ended.
    let flood = script("flood.sh", "exec cat /dev/zero");
    let out = semcheck_cmd().arg("doctor").env("SEMCHECK_PYTHON", &flood).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("flood.sh failed to start (killed by signal 13 (SIGPIPE)"), "{text}");
    // It answers, and leaves a child behind: the child is ended with it.
    let pid_file = dir.join("child.pid");
    let answer = r#"{"python": "3.12.0", "jax": "0.10.2", "jaxlib": "0.10.2", "semcheck": null}"#;
    let leaver = script("leaver.sh", &format!("sleep 120 &\necho $! > {}\necho '{answer}'", pid_file.display()));
    let out = semcheck_cmd().arg("doctor").env("SEMCHECK_PYTHON", &leaver).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert_child_ends(&pid_file, "the probed interpreter");
    // It never answers: a check's time budget holds while it is asked (not the probe's
    // own 30 s), and its child is ended with it.
    let _ = std::fs::remove_file(&pid_file);
    let silent = script("silent.sh", &format!("sleep 120 &\necho $! > {}\nwait", pid_file.display()));
    let kernel = repo().join("protocols/pallas/psum.py");
    let started = Instant::now();
    let out = semcheck_cmd()
        .args(["check", "--devices", "2", "--max-seconds", "2"])
        .arg(&kernel)
        .env("SEMCHECK_PYTHON", &silent)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(started.elapsed() < Duration::from_secs(15), "the budget of 2 s took {:?}", started.elapsed());
    assert!(
        text.contains(
            "stopped by the time budget of 2 s while preparing the Python front end (choosing its interpreter"
        ),
        "{text}"
    );
    assert_child_ends(&pid_file, "the silent interpreter");
}

#[test]
fn a_script_that_runs_semcheck_on_itself_is_refused_inside() {
    // Without the refusal, every level would run the script again, without end.
    let dir = temp_dir("hygiene-nested");
    let result = dir.join("inner.txt");
    let script = dir.join("nested.py");
    std::fs::write(
        &script,
        format!(
            "import subprocess\nr = subprocess.run([{exe:?}, 'check', __file__, '--devices', '2'], capture_output=True, text=True)\n\
             open({result:?}, 'w').write(f'{{r.returncode}}\\n{{r.stderr}}')\n",
            exe = env!("CARGO_BIN_EXE_semcheck"),
            result = result.display().to_string()
        ),
    )
    .unwrap();
    let out = semcheck_cmd().args(["check", script.to_str().unwrap(), "--devices", "2"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "no kernel: {}", String::from_utf8_lossy(&out.stderr));
    let inner = std::fs::read_to_string(&result).expect("the script ran semcheck");
    assert!(inner.starts_with("2\n"), "{inner}");
    assert!(inner.contains("semcheck was started by a script that semcheck is running to read its kernels"), "{inner}");
}

#[test]
fn the_managed_environment_is_made_by_a_python_new_enough_for_jax_or_not_at_all() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("bootstrap-python");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // Stand-ins that only say which Python they are (nothing is installed by them).
    let python = |name: &str, version: &str| {
        let path = bin.join(name);
        let answer = format!(r#"{{"python": "{version}", "jax": null, "jaxlib": null, "semcheck": null}}"#);
        std::fs::write(&path, format!("#!/bin/sh\necho '{answer}'\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    };
    let old = python("python3", "3.10.13");
    let cache = dir.join("cache");
    let script = dir.join("k.py");
    std::fs::write(&script, "pass\n").unwrap();
    let run = |args: &[&str], bootstrap: Option<&Path>| {
        let mut cmd = semcheck_cmd();
        cmd.args(args).env("PATH", &bin).env("SEMCHECK_PYTHON", "managed").env("SEMCHECK_CACHE_DIR", &cache);
        match bootstrap {
            Some(b) => cmd.env("SEMCHECK_BOOTSTRAP_PYTHON", b),
            None => cmd.env_remove("SEMCHECK_BOOTSTRAP_PYTHON"),
        };
        let out = cmd.output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.code(), text)
    };
    // Only a Python 3.10 on PATH: jax 0.10.2 cannot be installed there. Said by doctor and
    // by check, before anything is made.
    let needs = format!("needs Python 3.11 or newer, and PATH has none ({} is Python 3.10.13)", old.display());
    let (code, text) = run(&["doctor"], None);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("cannot be created") && text.contains(&needs), "{text}");
    let (code, text) = run(&["check", script.to_str().unwrap()], None);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains(&needs) && text.contains("Fix: install Python 3.11 or newer"), "{text}");
    assert!(!text.contains("pip"), "{text}");
    assert_eq!(temporary_envs(&cache), Vec::<String>::new());
    // Named explicitly, too old: said so.
    let (code, text) = run(&["check", script.to_str().unwrap()], Some(&old));
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains(&format!("SEMCHECK_BOOTSTRAP_PYTHON ({}) is Python 3.10.13", old.display())), "{text}");
    // A python3.12 beside it is the one chosen.
    let new = python("python3.12", "3.12.1");
    let (code, text) = run(&["doctor"], None);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains(&format!("  with {}", new.display())), "{text}");
    // Named explicitly and not runnable: doctor says so up front, naming the variable.
    let missing = dir.join("no-such-python");
    let (code, text) = run(&["doctor"], Some(&missing));
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains(&format!("SEMCHECK_BOOTSTRAP_PYTHON ({}) cannot be used", missing.display())), "{text}");
    // One whose `-m venv` fails: tried once by a check of two sizes, said once.
    let failing = bin.join("python3-novenv");
    let answer = r#"{"python": "3.12.1", "jax": null, "jaxlib": null, "semcheck": null}"#;
    std::fs::write(&failing, format!("#!/bin/sh\nif [ \"$1\" = -I ]; then echo '{answer}'; exit 0; fi\nexit 1\n"))
        .unwrap();
    std::fs::set_permissions(&failing, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, text) = run(&["check", script.to_str().unwrap(), "--devices", "2-3"], Some(&failing));
    assert_eq!(code, Some(2), "{text}");
    assert_eq!(text.matches("first use of the Python front end").count(), 1, "{text}");
}
