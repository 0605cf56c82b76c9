// egm_slurm without a cluster: the SLURM_* environment parser, the batch
// script renderer (golden file, sorting, quoting, refusals) and the helpers.
// Quoting is checked against bash itself, the program that will read it.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "slurm/batch_script.h"
#include "slurm/slurm_commands.h"
#include "slurm/slurm_env.h"
#include "util/error.h"
#include "util/files.h"
#include "util/shell.h"

namespace {

namespace fs = std::filesystem;
using egm::slurm::BatchParams;
using egm::slurm::render_batch_script;

const std::string kGoldenDir = std::string(EGM_SOURCE_DIR) + "/tests/slurm/golden";

BatchParams minimal_params() {
  return {{"workers", "2"}, {"time", "10"}, {"launch_command", "mpirun -np 1 a : -np 2 b"}};
}

// Runs `bash -c script` and returns its stdout; fails the test on a non-zero exit.
std::string run_bash(const std::string& script) {
  fs::path file = fs::temp_directory_path() / ("egm_test_slurm_" + std::to_string(::getpid()) + ".sh");
  egm::atomic_write_file(file.string(), script);
  std::string command = "bash " + file.string();
  FILE* pipe = ::popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string out;
  std::array<char, 4096> buffer{};
  std::size_t n;
  while (pipe && (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  int status = pipe ? ::pclose(pipe) : -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "bash failed on:\n" << script;
  fs::remove(file);
  return out;
}

std::vector<std::string> lines_starting_with(const std::string& text, const std::string& prefix) {
  std::vector<std::string> found;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) found.push_back(line);
  return found;
}

std::string config_error_message(const BatchParams& params) {
  try {
    render_batch_script(params);
  } catch (const egm::ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError";
  return "";
}

// ---------------------------------------------------------------------------

TEST(BatchScript, MatchesGoldenFile) {
  BatchParams params;
  std::ifstream in(kGoldenDir + "/egm-sweep.params");
  ASSERT_TRUE(in);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    auto eq = line.find('=');
    params[line.substr(0, eq)] = line.substr(eq + 1);
  }
  std::string golden = egm::read_file(kGoldenDir + "/egm-sweep.sbatch");
  EXPECT_EQ(render_batch_script(params), golden)
      << "the rendered script differs from tests/slurm/golden/egm-sweep.sbatch; if the template "
         "change is intended, regenerate it as tests/slurm/golden/egm-sweep.params says and review the diff";
}

TEST(BatchScript, EmbeddedTemplateIsTheSourceFile) {
  EXPECT_EQ(egm::slurm::batch_script_template(),
            egm::read_file(std::string(EGM_SOURCE_DIR) + "/slurm/egm-sweep.sbatch.tmpl"))
      << "re-run cmake: the embedded template is stale";
}

TEST(BatchScript, SbatchLinesAreSortedAndComplete) {
  BatchParams params = minimal_params();
  for (auto [name, value] : std::map<std::string, std::string>{
           {"account", "a"}, {"chdir", "/scratch"}, {"constraint", "h100"}, {"error", "e.err"},
           {"gpus_per_node", "4"}, {"gres", "gpu:4"}, {"mem", "64G"}, {"partition", "p"}, {"qos", "q"}})
    params[name] = value;
  auto lines = lines_starting_with(render_batch_script(params), "#SBATCH");
  std::vector<std::string> options;
  for (const auto& l : lines) options.push_back(l.substr(0, l.find('=')));
  // Every sbatch option the parameters map to, written out by hand, in byte order.
  std::vector<std::string> expected = {
      "#SBATCH --account",   "#SBATCH --chdir",         "#SBATCH --constraint", "#SBATCH --cpus-per-task",
      "#SBATCH --error",     "#SBATCH --gpus-per-node", "#SBATCH --gres",       "#SBATCH --job-name",
      "#SBATCH --mem",       "#SBATCH --nodes",         "#SBATCH --ntasks",     "#SBATCH --open-mode",
      "#SBATCH --output",    "#SBATCH --partition",     "#SBATCH --qos",        "#SBATCH --requeue",
      "#SBATCH --signal",    "#SBATCH --time"};
  EXPECT_EQ(options, expected);
  EXPECT_TRUE(std::is_sorted(lines.begin(), lines.end()));
}

TEST(BatchScript, DerivedLines) {
  BatchParams params = minimal_params();
  params["workers"] = "4";
  params["warning_seconds"] = "120";
  std::string script = render_batch_script(params);
  // ntasks = 4 workers + 1 coordinator.
  EXPECT_NE(script.find("\n#SBATCH --ntasks=5\n"), std::string::npos);
  EXPECT_NE(script.find("\n#SBATCH --signal=B:USR2@120\n"), std::string::npos);
  EXPECT_NE(script.find("\n#SBATCH --open-mode=append\n"), std::string::npos);
  EXPECT_NE(script.find("\n#SBATCH --requeue\n"), std::string::npos);
  // Defaults: one node, one core per rank, the egm-sweep log name.
  EXPECT_NE(script.find("\n#SBATCH --nodes=1\n"), std::string::npos);
  EXPECT_NE(script.find("\n#SBATCH --output=egm-sweep-%j.out\n"), std::string::npos);
  EXPECT_NE(script.find("if [ \"$status\" -ne 75 ]; then\n"), std::string::npos) << "requeues on the coordinator's 75";
  EXPECT_EQ(script.find("{{"), std::string::npos);
  EXPECT_EQ(script.find("--partition"), std::string::npos) << "absent optional parameters add no line";
}

TEST(BatchScript, ValuesAreShellQuoted) {
  BatchParams params = minimal_params();
  params["job_name"] = "my sweep's run";
  params["output"] = "logs/$USER.out";
  std::string script = render_batch_script(params);
  EXPECT_NE(script.find("\n#SBATCH --job-name='my sweep'\\''s run'\n"), std::string::npos) << script;
  EXPECT_NE(script.find("\n#SBATCH --output='logs/$USER.out'\n"), std::string::npos) << script;
}

TEST(BatchScript, ModulesBecomeAnArrayOfNames) {
  BatchParams params = minimal_params();
  EXPECT_NE(render_batch_script(params).find("\nmodules=()\n"), std::string::npos);
  params["modules"] = "gcc/12  openmpi/4.1.4 ";
  auto line = lines_starting_with(render_batch_script(params), "modules=");
  ASSERT_EQ(line.size(), 1u);
  EXPECT_EQ(line[0], "modules=(gcc/12 openmpi/4.1.4)");
  EXPECT_EQ(run_bash(line[0] + "\nprintf '%s|' \"${#modules[@]}\" \"${modules[@]}\"\n"), "2|gcc/12|openmpi/4.1.4|");
}

TEST(BatchScript, LaunchCommandSurvivesTheScriptsQuoting) {
  const std::string command =
      "mpirun -np 1 egm-coordinator --db 'my runs/a.sqlite' --note \"it's \\$x\" : -np 2 egm-worker";
  BatchParams params = minimal_params();
  params["launch_command"] = command;
  auto assignment = lines_starting_with(render_batch_script(params), "launch_command=");
  ASSERT_EQ(assignment.size(), 1u);
  EXPECT_EQ(run_bash(assignment[0] + "\nprintf %s \"$launch_command\"\n"), command);
}

TEST(BatchScript, RenderedScriptParses) {
  fs::path file = fs::temp_directory_path() / ("egm_test_render_" + std::to_string(::getpid()) + ".sbatch");
  BatchParams params = minimal_params();
  params["modules"] = "gcc/12";
  params["job_name"] = "a 'quoted' name";
  egm::atomic_write_file(file.string(), render_batch_script(params));
  std::string command = "bash -n " + file.string();
  EXPECT_EQ(std::system(command.c_str()), 0) << "bash -n rejects the rendered script " << file;
  fs::remove(file);
}

// Runs a rendered script outside Slurm and returns its exit status.
int run_rendered(const BatchParams& params, std::string* output) {
  fs::path file = fs::temp_directory_path() / ("egm_test_run_" + std::to_string(::getpid()) + ".sbatch");
  egm::atomic_write_file(file.string(), render_batch_script(params));
  std::string command = "bash " + file.string() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  std::array<char, 4096> buffer{};
  std::size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output->append(buffer.data(), n);
  int status = ::pclose(pipe);
  fs::remove(file);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(BatchScript, ScriptReturnsTheLaunchersStatus) {
  BatchParams params = minimal_params();
  params["launch_command"] = "sh -c 'exit 3'";
  std::string output;
  EXPECT_EQ(run_rendered(params, &output), 3) << output;
  EXPECT_NE(output.find("launcher exited with status 3"), std::string::npos) << output;

  // 75 asks for a requeue; with max_restarts=0 the script must refuse it
  // (and so never reach scontrol) and keep the status.
  params["launch_command"] = "sh -c 'exit 75'";
  params["max_restarts"] = "0";
  output.clear();
  EXPECT_EQ(run_rendered(params, &output), 75) << output;
  EXPECT_NE(output.find("not requeueing: attempt 0 reached max_restarts=0"), std::string::npos) << output;
}

TEST(BatchScript, RefusesUnknownParameterListingValidOnes) {
  BatchParams params = minimal_params();
  params["partiton"] = "gpu";
  std::string message = config_error_message(params);
  EXPECT_NE(message.find("unknown batch parameter 'partiton'"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'partition'?"), std::string::npos) << message;
  for (const char* name : {"account", "launch_command", "partition", "time", "warning_seconds", "workers"})
    EXPECT_NE(message.find(name), std::string::npos) << name << " missing from: " << message;

  params.erase("partiton");
  params["job-name"] = "x";  // sbatch's spelling
  EXPECT_NE(config_error_message(params).find("did you mean 'job_name'?"), std::string::npos);
  params.erase("job-name");
  params["ntasks"] = "3";
  EXPECT_NE(config_error_message(params).find("set 'workers'"), std::string::npos);
  params.erase("ntasks");
  params["xyzzy"] = "1";
  EXPECT_EQ(config_error_message(params).find("did you mean"), std::string::npos);
}

TEST(BatchScript, RefusesMissingAndMalformedValues) {
  auto refused = [](std::map<std::string, std::string> changes, const char* expected) {
    BatchParams params = minimal_params();
    for (auto& [k, v] : changes) {
      if (v == "<erase>") params.erase(k); else params[k] = v;
    }
    std::string message = config_error_message(params);
    EXPECT_NE(message.find(expected), std::string::npos) << "got: " << message;
  };
  refused({{"workers", "<erase>"}}, "'workers' is required");
  refused({{"launch_command", "<erase>"}}, "'launch_command' is required");
  refused({{"workers", "0"}}, "workers=0 is out of range");
  refused({{"workers", "two"}}, "not a whole number");
  refused({{"workers", "-1"}}, "not a whole number");
  refused({{"nodes", "4"}}, "every node needs at least one task");  // 2 workers + 1 = 3 tasks
  refused({{"time", "5"}}, "not shorter than time=5");              // 300 s warning, 300 s limit
  refused({{"time", "1:2:3:4"}}, "not a Slurm time limit");
  refused({{"mem", "64GB"}}, "mem='64GB'");
  refused({{"gpus_per_node", "4x"}}, "gpus_per_node='4x'");
  refused({{"gpus_per_node", ":4"}}, "gpus_per_node=':4'");
  refused({{"job_name", "two\nlines"}}, "newline");
  refused({{"partition", ""}}, "'partition' is empty");
  refused({{"modules", "gcc;rm"}}, "module names");
  refused({{"warning_seconds", "70000"}}, "out of range");

  BatchParams ok = minimal_params();
  ok["time"] = "5:01";  // 301 s > 300 s warning
  ok["mem"] = "64G";
  ok["gpus_per_node"] = "h100:8";
  EXPECT_NO_THROW(render_batch_script(ok));
  ok["nodes"] = "3";  // exactly one task per node
  EXPECT_NO_THROW(render_batch_script(ok));
}

TEST(ShellQuote, BashReadsBackTheOriginal) {
  const std::vector<std::string> values = {
      "plain",  "with space", "it's",   "$HOME",     "`date`",   "a\"b",   "*",    "",
      "back\\slash", "semi;colon", "~user", "!bang", "tab\there", "''",   "-n", "%j.out"};
  std::string script;
  for (const auto& v : values) script += "printf '%s\\0' " + egm::shell_quote(v) + "\n";
  std::string out = run_bash(script);
  std::vector<std::string> read_back;
  for (std::size_t start = 0, end; (end = out.find('\0', start)) != std::string::npos; start = end + 1)
    read_back.push_back(out.substr(start, end - start));
  EXPECT_EQ(read_back, values);
  // Safe words stay bare, the rest are single-quoted.
  EXPECT_EQ(egm::shell_quote("egm-sweep-%j.out"), "egm-sweep-%j.out");
  EXPECT_EQ(egm::shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(egm::shell_quote(""), "''");
}

TEST(SlurmTime, ParsesEverySbatchForm) {
  using egm::slurm::parse_slurm_time_seconds;
  // Hand-computed: the forms of sbatch --time (man sbatch).
  EXPECT_EQ(parse_slurm_time_seconds("30"), 30 * 60);                         // minutes
  EXPECT_EQ(parse_slurm_time_seconds("1:30"), 90);                            // minutes:seconds
  EXPECT_EQ(parse_slurm_time_seconds("2:00:00"), 7200);                       // hours:minutes:seconds
  EXPECT_EQ(parse_slurm_time_seconds("1-0"), 86400);                          // days-hours
  EXPECT_EQ(parse_slurm_time_seconds("1-02:03"), 86400 + 2 * 3600 + 3 * 60);  // days-hours:minutes
  EXPECT_EQ(parse_slurm_time_seconds("1-02:03:04"), 93784);                   // days-hours:minutes:seconds
  for (const char* bad : {"", "0", "abc", "1:2:3:4", "-5", "1-", "1--2", "1:", "2-3:4:5:6", "1.5", "UNLIMITED"})
    EXPECT_THROW(parse_slurm_time_seconds(bad), egm::ConfigError) << bad;
}

TEST(SbatchOutput, FindsTheJobId) {
  using egm::slurm::parse_sbatch_job_id;
  EXPECT_EQ(parse_sbatch_job_id("Submitted batch job 123\n"), 123u);
  EXPECT_EQ(parse_sbatch_job_id("sbatch: warning: can't honor --ntasks-per-node\nSubmitted batch job 9\n"), 9u);
  EXPECT_EQ(parse_sbatch_job_id("Submitted batch job 77 on cluster c2\n"), 77u);
  EXPECT_EQ(parse_sbatch_job_id("456\n"), 456u);
  EXPECT_EQ(parse_sbatch_job_id("456;c2"), 456u);
  EXPECT_EQ(parse_sbatch_job_id("4294967296"), 4294967296u);
  for (const char* bad : {"", "sbatch: error: Batch job submission failed", "Submitted batch job x", "12ab"})
    EXPECT_THROW(parse_sbatch_job_id(bad), egm::Error) << bad;
}

// ---------------------------------------------------------------------------

egm::slurm::SlurmEnv env_from(std::map<std::string, std::string> vars) {
  return egm::slurm::read_slurm_env([vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

TEST(SlurmEnv, ReadsAJob) {
  auto env = env_from({{"SLURM_JOB_ID", "4242"},
                       {"SLURM_RESTART_COUNT", "2"},
                       {"SLURM_PROCID", "3"},
                       {"SLURM_LOCALID", "1"},
                       {"SLURM_NTASKS", "9"},
                       {"SLURM_JOB_NODELIST", "gpu[01-02]"},
                       {"SLURM_CPUS_PER_TASK", "4"},
                       {"SLURM_GPUS_ON_NODE", "4"},
                       {"SLURM_JOB_GPUS", "0,1,2,3"}});
  ASSERT_TRUE(env.in_job());
  EXPECT_EQ(*env.job_id, 4242u);
  EXPECT_EQ(env.restart_count, 2);
  EXPECT_EQ(env.procid, 3);
  EXPECT_EQ(env.local_id, 1);
  EXPECT_EQ(env.ntasks, 9);
  EXPECT_EQ(env.nodelist, "gpu[01-02]");
  EXPECT_EQ(env.cpus_per_task, 4);
  EXPECT_EQ(env.gpus_on_node, 4);
  EXPECT_EQ(env.job_gpus, "0,1,2,3");
  EXPECT_EQ(env.summary(), "job 4242 attempt 2, 9 tasks on gpu[01-02], 4 GPUs on this node");
}

TEST(SlurmEnv, OutsideAJobAndFirstAttempt) {
  auto outside = env_from({});
  EXPECT_FALSE(outside.in_job());
  EXPECT_EQ(outside.restart_count, 0);
  EXPECT_FALSE(outside.ntasks.has_value());
  EXPECT_EQ(outside.summary(), "not in a Slurm job");
  // A first attempt has no SLURM_RESTART_COUNT; old Slurm spells the id SLURM_JOBID.
  auto first = env_from({{"SLURM_JOBID", "7"}});
  EXPECT_EQ(first.job_id, 7u);
  EXPECT_EQ(first.restart_count, 0);
}

TEST(SlurmEnv, MalformedValuesNameTheVariable) {
  for (auto [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"SLURM_NTASKS", "4x"}, {"SLURM_RESTART_COUNT", "-1"}, {"SLURM_JOB_ID", ""},
           {"SLURM_PROCID", "99999999999"}}) {
    try {
      env_from({{name, value}});
      ADD_FAILURE() << name << "=" << value << " accepted";
    } catch (const egm::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(name + "='" + value + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(SlurmEnv, ReadsTheProcessEnvironment) {
  ::setenv("SLURM_JOB_ID", "31337", 1);
  ::setenv("SLURM_RESTART_COUNT", "1", 1);
  auto env = egm::slurm::read_slurm_env();
  ::unsetenv("SLURM_JOB_ID");
  ::unsetenv("SLURM_RESTART_COUNT");
  EXPECT_EQ(env.job_id, 31337u);
  EXPECT_EQ(env.restart_count, 1);
}

}  // namespace

// ---- sbatch / squeue / sacct, with stand-in scripts first on PATH ---------------------------

namespace {

// A folder of fake Slurm client commands put first on PATH for the test's
// lifetime (PATH restored after). Each fake is a bash script.
class FakeSlurmClients {
 public:
  FakeSlurmClients() {
    dir_ = fs::temp_directory_path() / ("egm_fake_slurm_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    saved_path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
    ::setenv("PATH", (dir_.string() + ":" + saved_path_).c_str(), 1);
  }
  ~FakeSlurmClients() {
    ::setenv("PATH", saved_path_.c_str(), 1);
    fs::remove_all(dir_);
  }
  void add(const std::string& name, const std::string& body) {
    const std::string path = (dir_ / name).string();
    egm::atomic_write_file(path, "#!/bin/bash\n" + body + "\n");
    fs::permissions(path, fs::perms::owner_all);
  }
  // Hides a real client: PATH holds only the fakes and the shell's folders.
  void only_fakes_on_path() { ::setenv("PATH", (dir_.string() + ":/usr/bin/nonexistent").c_str(), 1); }
  fs::path dir() const { return dir_; }

 private:
  fs::path dir_;
  std::string saved_path_;
};

}  // namespace

TEST(RunProgram, KeepsStdoutAndStderrApartAndReportsTheExitStatus) {
  auto run = egm::slurm::run_program({"bash", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_TRUE(run.started);
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_EQ(run.out, "out\n");
  EXPECT_EQ(run.err, "err\n");
  EXPECT_FALSE(run.timed_out);
}

TEST(RunProgram, MissingProgramAndTimeout) {
  EXPECT_FALSE(egm::slurm::run_program({"egm-no-such-program-xyz"}).started);
  auto slow = egm::slurm::run_program({"bash", "-c", "sleep 30"}, 0.3);
  EXPECT_TRUE(slow.timed_out);
  EXPECT_EQ(slow.exit_code, 128 + 9);  // SIGKILL
}

TEST(SubmitBatchScript, ReturnsTheJobIdAndPassesTheScript) {
  FakeSlurmClients fake;
  fake.add("sbatch", "echo \"$1\" > " + (fake.dir() / "args").string() + "; echo 'Submitted batch job 4242'");
  EXPECT_EQ(egm::slurm::submit_batch_script("some/job.sbatch"), 4242u);
  EXPECT_EQ(egm::read_file((fake.dir() / "args").string()), fs::absolute("some/job.sbatch").string() + "\n");
}

TEST(SubmitBatchScript, FailureQuotesSbatchStderr) {
  FakeSlurmClients fake;
  fake.add("sbatch", "echo 'sbatch: error: Batch job submission failed: Invalid account' >&2; exit 1");
  try {
    egm::slurm::submit_batch_script("job.sbatch");
    FAIL() << "a failed sbatch went unnoticed";
  } catch (const egm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("sbatch failed (exit 1)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Invalid account"), std::string::npos) << e.what();
  }
  fake.add("sbatch", "echo 'queued, somehow'");
  EXPECT_THROW(egm::slurm::submit_batch_script("job.sbatch"), egm::Error);  // no job id
}

TEST(SubmitBatchScript, MissingSbatchSaysSo) {
  FakeSlurmClients fake;
  fake.only_fakes_on_path();
  try {
    egm::slurm::submit_batch_script("job.sbatch");
    FAIL() << "a missing sbatch went unnoticed";
  } catch (const egm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot run 'sbatch'"), std::string::npos) << e.what();
  }
}

TEST(JobState, FromSqueueThenSacctThenUnknown) {
  FakeSlurmClients fake;
  fake.only_fakes_on_path();
  // No squeue at all (a laptop with a copied database).
  auto none = egm::slurm::query_job_state("7");
  EXPECT_EQ(none.state, "unknown (squeue unavailable)");
  EXPECT_FALSE(none.known());
  // squeue knows the job: its %T state, for exactly that job.
  fake.add("squeue", "[ \"$*\" = '-h -t all -j 7 -o %T' ] && echo RUNNING");
  auto running = egm::slurm::query_job_state("7");
  EXPECT_EQ(running.state, "RUNNING");
  EXPECT_EQ(running.source, "squeue");
  EXPECT_TRUE(running.active());
  // The controller forgot it (squeue exits 1); accounting remembers.
  fake.add("squeue", "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1");
  fake.add("sacct", "[ \"$*\" = '-n -X -P -j 7 -o State' ] && echo 'CANCELLED by 0'");
  auto cancelled = egm::slurm::query_job_state("7");
  EXPECT_EQ(cancelled.state, "CANCELLED");
  EXPECT_EQ(cancelled.source, "sacct");
  EXPECT_FALSE(cancelled.active());
  // No accounting either: unknown, with both reasons.
  fake.add("sacct", "echo 'sacct: error: Slurm accounting storage is disabled' >&2; exit 1");
  auto unknown = egm::slurm::query_job_state("7");
  EXPECT_EQ(unknown.state,
            "unknown (squeue: slurm_load_jobs error: Invalid job id specified; sacct: sacct: error: Slurm "
            "accounting storage is disabled)");
}
