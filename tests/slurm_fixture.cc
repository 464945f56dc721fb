#include "slurm_fixture.h"

#include <fmt/format.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "gpumon/process_runner.h"
#include "orch/process_util.h"

namespace gpuscale::slurm_test {
namespace {

namespace fs = std::filesystem;

std::string ShortHostname() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  std::string host = name;
  return host.substr(0, host.find('.'));
}

std::string Tail(const fs::path& path, size_t bytes) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > bytes ? text.substr(text.size() - bytes) : text;
}

// SIGTERM, then SIGKILL if it has not exited within ~5 s; reaps it.
void StopPid(int pid) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace

std::string SlurmTestCluster::MissingBinaries() {
  std::string missing;
  for (const char* tool : {"slurmctld", "slurmd", "slurmrestd", "sbatch", "squeue", "sinfo",
                           "scancel", "scontrol"}) {
    bool found = false;
    for (const char* dir : {"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"}) {
      found = found || access((fs::path(dir) / tool).c_str(), X_OK) == 0;
    }
    if (!found) missing += std::string(missing.empty() ? "" : ", ") + tool;
  }
  return missing.empty() ? "" : "Slurm binaries not installed (" + missing +
                                    "): apt-get install slurm-wlm slurmrestd";
}

std::string SlurmTestCluster::user() const {
  const passwd* pw = getpwuid(getuid());
  return pw != nullptr ? pw->pw_name : "root";
}

std::string SlurmTestCluster::rest_url() const {
  return fmt::format("http://127.0.0.1:{}", rest_port_);
}

Result<std::unique_ptr<SlurmTestCluster>> SlurmTestCluster::Start(Options options) {
  // The daemons bind ports the kernel picked free moments before: another test's client
  // connection can take one in between, and that daemon dies at start. A fresh cluster on
  // fresh ports is then the fix, so a start is tried up to three times.
  std::string errors;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    Result<std::unique_ptr<SlurmTestCluster>> started = StartOnce(options);
    if (started) return started;
    errors += fmt::format("attempt {}: {}\n", attempt, started.error().message);
  }
  return Unavailable("the Slurm test cluster did not start in 3 attempts\n" + errors);
}

Result<std::unique_ptr<SlurmTestCluster>> SlurmTestCluster::StartOnce(Options options) {
  std::unique_ptr<SlurmTestCluster> c(new SlurmTestCluster(options));
  std::random_device random;
  c->dir_ = (fs::temp_directory_path() / fmt::format("gpuscale_slurm_{}_{:x}", getpid(),
                                                      random()))
                .string();
  GS_RETURN_IF_ERROR(c->WriteConfig());
  GS_RETURN_IF_ERROR(c->StartDaemons());
  return c;  // the destructor cleans up after any failure above
}

// slurm.conf + gres.conf for `nodes` nodes on this host (see the header).
Status SlurmTestCluster::WriteConfig() {
  std::set<int> taken;
  auto port = [&]() -> Result<int> {
    GS_ASSIGN_OR_RETURN(int p, orch::PickFreePort(0, 0, taken));
    taken.insert(p);
    return p;
  };
  GS_ASSIGN_OR_RETURN(ctld_port_, port());
  GS_ASSIGN_OR_RETURN(rest_port_, port());
  for (int i = 0; i < options_.nodes; ++i) {
    GS_ASSIGN_OR_RETURN(int p, port());
    node_ports_.push_back(p);
  }
  const fs::path dir = dir_;
  std::error_code ec;
  for (const char* sub : {"state", "spool", "log", "gres"}) fs::create_directories(dir / sub, ec);
  if (ec) return Unavailable("cannot create " + dir_ + ": " + ec.message());
  for (int g = 0; g < options_.gpus_per_node; ++g) {
    fs::create_symlink("/dev/null", dir / "gres" / fmt::format("gpu{}", g), ec);
  }
  const std::string host = ShortHostname();
  conf_ = (dir / "slurm.conf").string();
  std::ofstream conf(conf_);
  conf << fmt::format(
      "ClusterName=gpuscaletest\nSlurmctldHost={host}(127.0.0.1)\nSlurmctldPort={ctld}\n"
      "SlurmUser={user}\nSlurmdUser={user}\nAuthType=auth/none\nCredType=cred/none\n"
      "AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={dir}/jwt.key\n"
      "StateSaveLocation={dir}/state\nSlurmdSpoolDir={dir}/spool/%n\n"
      "SlurmctldPidFile={dir}/slurmctld.pid\nSlurmdPidFile={dir}/slurmd.%n.pid\n"
      "SlurmctldLogFile={dir}/log/slurmctld.log\nSlurmdLogFile={dir}/log/slurmd.%n.log\n"
      "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nMpiDefault=none\n"
      "SchedulerType=sched/backfill\nSchedulerParameters=bf_interval=1\n"
      "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
      "SlurmdParameters=config_overrides\nGresTypes=gpu\nMailProg=/bin/true\n"
      "ReturnToService=2\nMessageTimeout=2\nKillWait=2\nJobAcctGatherType=jobacct_gather/none\n"
      "AccountingStorageType=accounting_storage/none\n",
      fmt::arg("host", host), fmt::arg("ctld", ctld_port_), fmt::arg("user", user()),
      fmt::arg("dir", dir_));
  std::string names;
  std::ofstream gres(dir / "gres.conf");
  gres << "AutoDetect=off\n";
  for (int i = 0; i < options_.nodes; ++i) {
    const std::string name = fmt::format("n{}", i + 1);
    names += (names.empty() ? "" : ",") + name;
    conf << fmt::format("NodeName={} NodeHostname={} NodeAddr=127.0.0.1 Port={} CPUs=16 "
                        "RealMemory=1000 Gres=gpu:tesla:{} State=UNKNOWN\n",
                        name, host, node_ports_[i], options_.gpus_per_node);
    gres << fmt::format("NodeName={} Name=gpu Type=tesla File={}/gres/gpu[0-{}]\n", name, dir_,
                        options_.gpus_per_node - 1);
  }
  conf << "PartitionName=gpu Nodes=" << names << " Default=YES MaxTime=INFINITE State=UP\n";
  std::ofstream key(dir / "jwt.key", std::ios::binary);
  std::mt19937_64 bytes{std::random_device{}()};
  for (int i = 0; i < 4; ++i) {
    const uint64_t word = bytes();
    key.write(reinterpret_cast<const char*>(&word), sizeof(word));
  }
  key.close();
  fs::permissions(dir / "jwt.key", fs::perms::owner_read | fs::perms::owner_write, ec);
  if (!conf || !gres) return Unavailable("cannot write " + conf_);
  return OkStatus();
}

int SlurmTestCluster::Spawn(const std::vector<std::string>& argv, const std::string& log_name) {
  orch::SpawnRequest request{argv,
                             orch::ChildEnvironment({{"SLURM_CONF", conf_},
                                                     {"SLURMRESTD_SECURITY",
                                                      "disable_user_check"}}),
                             (fs::path(dir_) / "log" / log_name).string(), ""};
  Result<int> pid = orch::SpawnDetached(request);
  return pid ? *pid : 0;
}

Status SlurmTestCluster::StartController() {
  ctld_pid_ = Spawn({"slurmctld", "-D", "-f", conf_}, "slurmctld.out");
  if (ctld_pid_ == 0) return Unavailable("cannot start slurmctld");
  // The controller answers once sinfo works.
  for (int i = 0; i < 100; ++i) {
    if (Client({"sinfo", "-h"})) return OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Unavailable("slurmctld did not answer within 10 s\n" + LogTails());
}

void SlurmTestCluster::StopController() {
  StopPid(ctld_pid_);
  ctld_pid_ = 0;
}

Status SlurmTestCluster::StartDaemons() {
  GS_RETURN_IF_ERROR(StartController());
  for (int i = 0; i < options_.nodes; ++i) {
    const std::string name = fmt::format("n{}", i + 1);
    slurmd_pids_.push_back(Spawn({"slurmd", "-D", "-N", name, "-f", conf_}, name + ".out"));
  }
  GS_RETURN_IF_ERROR(WaitForIdleNodes(Seconds{20}));
  if (!options_.rest) return OkStatus();
  GS_RETURN_IF_ERROR(FetchToken());
  rest_pid_ = Spawn({"slurmrestd", "-a", "rest_auth/jwt", "-s", "openapi/v0.0.38",
                     fmt::format("127.0.0.1:{}", rest_port_)},
                    "slurmrestd.out");
  for (int i = 0; i < 100; ++i) {
    Result<int> free = orch::PickFreePort(rest_port_, rest_port_, {});
    if (!free && free.error().code == ErrorCode::kResourceExhausted) {
      return OkStatus();  // the port is bound: slurmrestd listens
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Unavailable("slurmrestd did not listen within 10 s\n" + LogTails());
}

Status SlurmTestCluster::WaitForIdleNodes(Seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    Result<std::string> states = Client({"sinfo", "-h", "-N", "-o", "%t"});
    if (states) {
      int idle = 0;
      for (size_t pos = 0; (pos = states->find("idle", pos)) != std::string::npos; ++pos) ++idle;
      if (idle == options_.nodes) return OkStatus();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return Unavailable("Slurm nodes did not become idle\n" + LogTails());
}

Status SlurmTestCluster::FetchToken() {
  GS_ASSIGN_OR_RETURN(std::string out,
                      Client({"scontrol", "token", "lifespan=3600", "username=" + user()}));
  const size_t eq = out.find("SLURM_JWT=");
  if (eq == std::string::npos) return Unavailable("scontrol token printed no token: " + out);
  token_ = out.substr(eq + 10);
  while (!token_.empty() && (token_.back() == '\n' || token_.back() == ' ')) token_.pop_back();
  return OkStatus();
}

Result<std::string> SlurmTestCluster::Client(const std::vector<std::string>& argv) const {
  std::vector<std::string> full = {"env", "SLURM_CONF=" + conf_};
  full.insert(full.end(), argv.begin(), argv.end());
  GS_ASSIGN_OR_RETURN(gpu::ProcessOutput out, gpu::RunProcess(full, Seconds{20}));
  if (out.exit_code != 0) {
    return Unavailable(fmt::format("{} failed (exit {}): {}", argv[0], out.exit_code,
                                   out.stderr_text));
  }
  return out.stdout_text;
}

Status SlurmTestCluster::CancelAllJobs(Seconds timeout) {
  (void)Client({"scancel", "-u", user()});
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    Result<std::string> jobs = Client({"squeue", "-h", "-o", "%i"});
    if (jobs && jobs->find_first_not_of(" \n") == std::string::npos) return OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return Unavailable("jobs still queued after scancel");
}

std::string SlurmTestCluster::LogTails() const {
  std::string out;
  for (const char* log : {"slurmctld.out", "n1.out", "slurmrestd.out"}) {
    out += fmt::format("--- {}:\n{}\n", log, Tail(fs::path(dir_) / "log" / log, 1500));
  }
  return out;
}

SlurmTestCluster::~SlurmTestCluster() {
  // A test that failed while the controller was stopped still gets its jobs cancelled.
  if (ctld_pid_ == 0 && !slurmd_pids_.empty()) (void)StartController();
  if (ctld_pid_ > 0) (void)CancelAllJobs(Seconds{15});
  StopPid(rest_pid_);
  for (int pid : slurmd_pids_) StopPid(pid);
  StopPid(ctld_pid_);
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

}  // namespace gpuscale::slurm_test
