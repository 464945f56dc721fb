// Every `gpuscale <command> --flag` the documentation shows exists: the README and docs/*.md
// are scanned for command lines (code blocks, indented code and inline code spans), and each
// flag is looked up in its command's --help, as a user would. A renamed flag that a page
// still shows (issue 44: `serve --keep-replicas`, which exits 2) fails here.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"

namespace gpuscale::cli {
namespace {

namespace fs = std::filesystem;

// What `gpuscale <path> --help` lists: its option names and its subcommands.
struct CommandHelp {
  std::set<std::string> options;
  std::set<std::string> subcommands;
};

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// Reads CLI11's help: option lines start with '-' ("-o,--output TEXT ..."), subcommand lines
// follow a "Subcommands:" heading ("  gpus   List ...").
CommandHelp ParseHelp(const std::string& help) {
  CommandHelp parsed;
  std::istringstream lines(help);
  bool in_subcommands = false;
  for (std::string line; std::getline(lines, line);) {
    const std::vector<std::string> words = Words(line);
    if (words.empty()) continue;
    if (line[0] != ' ') {
      std::string heading = words[0];
      for (char& c : heading) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      in_subcommands = heading == "subcommands:";
      continue;
    }
    if (words[0][0] == '-') {
      std::istringstream names(words[0]);
      for (std::string name; std::getline(names, name, ',');) parsed.options.insert(name);
    } else if (in_subcommands && line.starts_with("  ") && line[2] != ' ') {
      parsed.subcommands.insert(words[0]);
    }
  }
  return parsed;
}

class HelpCache {
 public:
  const CommandHelp& Of(const std::vector<std::string>& path) {
    auto it = cache_.find(path);
    if (it != cache_.end()) return it->second;
    std::vector<std::string> args = path;
    args.push_back("--help");
    std::ostringstream out, err;
    const int code = RunCli(args, out, err);
    EXPECT_EQ(code, kExitOk) << err.str();
    return cache_.emplace(path, ParseHelp(out.str())).first->second;
  }

 private:
  std::map<std::vector<std::string>, CommandHelp> cache_;
};

// The parts of a Markdown line that may hold a command: its inline code spans (`spans`), and
// the whole line inside fenced or indented code (`lines`).
struct Chunks {
  std::vector<std::string> lines, spans;
};

Chunks CodeChunks(const std::string& line, bool in_code) {
  Chunks chunks;
  if (in_code || line.starts_with("    ")) chunks.lines.push_back(line);
  size_t open = line.find('`');
  while (open != std::string::npos) {
    const size_t close = line.find('`', open + 1);
    if (close == std::string::npos) break;
    chunks.spans.push_back(line.substr(open + 1, close - open - 1));
    open = line.find('`', close + 1);
  }
  return chunks;
}

bool EndsCommand(const std::string& word) {
  return word == "|" || word == "||" || word == "&&" || word == ";" || word == "--" ||
         word.starts_with("#") || word.starts_with(">") || word.starts_with("2>") ||
         word.starts_with("`");
}

struct Mention {
  std::string where;  // "docs/operations.md:66"
  std::vector<std::string> path;
  std::string flag;
};

// The flags of the command whose words start at words[j] (after "gpuscale", or a span's
// first word): its subcommand path is the longest run of words `help` lists as subcommands.
void FlagsOfCommand(const std::vector<std::string>& words, size_t j, const std::string& where,
                    HelpCache& help, std::vector<Mention>& mentions) {
  std::vector<std::string> path;
  while (j < words.size() && help.Of(path).subcommands.contains(words[j])) {
    path.push_back(words[j++]);
  }
  if (path.empty()) return;  // "~/.local/state/gpuscale", "gpuscale <command>"
  for (; j < words.size() && !EndsCommand(words[j]); ++j) {
    if (!words[j].starts_with("--") || words[j].size() < 3 ||
        !std::isalpha(static_cast<unsigned char>(words[j][2]))) {
      continue;  // not a flag: "--", "-->" (an arrow)
    }
    std::string flag = words[j].substr(0, words[j].find('='));
    while (!flag.empty() && std::string_view(",.;:)`'\"").find(flag.back()) != std::string::npos) {
      flag.pop_back();
    }
    mentions.push_back({where, path, flag});
  }
}

// Each "gpuscale <command...> ... --flag" in `chunk`; in an inline span (`span`) also one
// that leaves out the program's name ("`serve --keep-replicas-on-exit` leaves them").
void FindMentions(const std::string& chunk, bool span, const std::string& where, HelpCache& help,
                  std::vector<Mention>& mentions) {
  const std::vector<std::string> words = Words(chunk);
  if (span) FlagsOfCommand(words, 0, where, help, mentions);
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] == "gpuscale" || words[i].ends_with("/gpuscale")) {
      FlagsOfCommand(words, i + 1, where, help, mentions);
    }
  }
}

std::vector<Mention> MentionsIn(const fs::path& file, const std::string& name, HelpCache& help) {
  std::vector<Mention> mentions;
  std::ifstream in(file);
  bool in_fence = false;
  std::string line, joined;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.starts_with("```")) {
      in_fence = !in_fence;
      continue;
    }
    // A shell line continued with '\' is one command.
    if ((in_fence || line.starts_with("    ")) && line.ends_with("\\")) {
      joined += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    joined += line;
    const std::string where = name + ":" + std::to_string(number);
    const Chunks chunks = CodeChunks(joined, in_fence);
    for (const std::string& chunk : chunks.lines) FindMentions(chunk, false, where, help, mentions);
    for (const std::string& chunk : chunks.spans) FindMentions(chunk, true, where, help, mentions);
    joined.clear();
  }
  return mentions;
}

std::vector<fs::path> DocumentFiles() {
  const fs::path root = GPUSCALE_SOURCE_DIR;
  std::vector<fs::path> files = {root / "README.md"};
  for (const fs::directory_entry& entry : fs::directory_iterator(root / "docs")) {
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  }
  return files;
}

TEST(DocsFlagsTest, EveryDocumentedFlagExists) {
  HelpCache help;
  const fs::path root = GPUSCALE_SOURCE_DIR;
  std::vector<Mention> mentions;
  for (const fs::path& file : DocumentFiles()) {
    const std::vector<Mention> found = MentionsIn(file, fs::relative(file, root).string(), help);
    mentions.insert(mentions.end(), found.begin(), found.end());
  }
  // The pages show dozens of flags; a parser that finds none is broken, not a clean bill.
  ASSERT_GT(mentions.size(), 50u);
  for (const Mention& m : mentions) {
    std::string command = "gpuscale";
    for (const std::string& word : m.path) command += " " + word;
    EXPECT_TRUE(help.Of(m.path).options.contains(m.flag))
        << m.where << ": `" << command << " " << m.flag << "`: " << command
        << " has no such flag (see " << command << " --help)";
  }
}

// The parser itself, on the line issue 44 reported and a few shapes the pages use.
TEST(DocsFlagsTest, FindsFlagsInCommandLinesOnly) {
  HelpCache help;
  std::vector<Mention> mentions;
  FindMentions("serve --keep-replicas", /*span=*/true, "a", help, mentions);
  FindMentions("build/gpuscale task show 4 --output=json | jq .id --raw", false, "b", help,
               mentions);
  FindMentions("cd ~/.local/state/gpuscale --nothing", false, "c", help, mentions);
  FindMentions("serve --in-a-line-of-code-without-the-program", false, "d", help, mentions);
  ASSERT_EQ(mentions.size(), 2u);
  EXPECT_EQ(mentions[0].path, std::vector<std::string>{"serve"});
  EXPECT_EQ(mentions[0].flag, "--keep-replicas");
  EXPECT_FALSE(help.Of(mentions[0].path).options.contains("--keep-replicas"));
  EXPECT_TRUE(help.Of(mentions[0].path).options.contains("--keep-replicas-on-exit"));
  EXPECT_EQ(mentions[1].path, (std::vector<std::string>{"task", "show"}));
  EXPECT_EQ(mentions[1].flag, "--output");
  EXPECT_TRUE(help.Of(mentions[1].path).options.contains("--output"));
}

}  // namespace
}  // namespace gpuscale::cli
