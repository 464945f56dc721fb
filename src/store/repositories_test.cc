#include <gtest/gtest.h>

#include "store/store.h"
#include "testing/store_test_util.h"

namespace gpuscale::store {
namespace {

class RepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::Open(":memory:", Seconds{0});
    ASSERT_TRUE(store) << store.error().ToString();
    store_ = std::move(*store);
  }
  void AddService(const std::string& name) {
    ASSERT_TRUE(store_->services().Put(MakeServiceRow(name, "spec", Seconds{1}, Seconds{1})));
  }
  RuleRow Rule(const std::string& service, const std::string& name) {
    RuleRow rule;
    rule.service = service;
    rule.name = name;
    rule.metric = "vllm:num_requests_waiting";
    rule.comparator = "GREATER_THAN";
    rule.threshold = 10;
    rule.step_size = 2;
    rule.cooldown = Seconds{60};
    rule.max_replicas = 8;
    rule.created_at = Seconds{5};
    return rule;
  }
  std::unique_ptr<Store> store_;
};

TEST_F(RepositoryTest, ServicePutUpdatesButKeepsCreationTime) {
  ASSERT_TRUE(store_->services().Put(MakeServiceRow("chat", "v1", Seconds{10}, Seconds{10})));
  ServiceRow v2 = MakeServiceRow("chat", "v2", Seconds{99}, Seconds{20});
  v2.paused = true;
  ASSERT_TRUE(store_->services().Put(v2));
  ASSERT_TRUE(store_->services().Put(MakeServiceRow("code", "c", Seconds{30}, Seconds{30})));
  auto chat = store_->services().Get("chat");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->spec, "v2");
  EXPECT_TRUE(chat->paused);
  EXPECT_EQ(chat->created_at, Seconds{10});
  EXPECT_EQ(chat->updated_at, Seconds{20});
  auto all = store_->services().List();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].name, "code");
  ASSERT_TRUE(store_->services().Delete("code"));
  EXPECT_EQ(store_->services().Get("code").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(store_->services().Delete("code").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(store_->services().Put(ServiceRow{}).error().field, "name");
}

TEST_F(RepositoryTest, ServiceMarkedDeletingKeepsItsSpecButNotItsRulesUntilFinished) {
  ServiceRow chat = MakeServiceRow("chat", "engine: slurm", Seconds{1}, Seconds{1});
  chat.manual_replicas = 3;
  ASSERT_TRUE(store_->services().Put(chat));
  ASSERT_TRUE(store_->rules().Add(Rule("chat", "queue-high")));
  ASSERT_TRUE(store_->services().MarkDeleting("chat"));
  auto marked = store_->services().Get("chat");
  ASSERT_TRUE(marked);
  EXPECT_TRUE(marked->deleting);
  EXPECT_EQ(marked->spec, "engine: slurm");  // how to reach the replicas' engine
  EXPECT_FALSE(marked->manual_replicas.has_value());
  EXPECT_TRUE(store_->rules().ListForService("chat")->empty());
  EXPECT_EQ(store_->services().List()->size(), 1u);  // listed, for the daemon to filter
  ASSERT_TRUE(store_->services().FinishDeleting("chat"));
  EXPECT_EQ(store_->services().Get("chat").error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(store_->services().FinishDeleting("chat"));  // nothing left: not an error
  EXPECT_EQ(store_->services().MarkDeleting("chat").error().code, ErrorCode::kNotFound);
}

TEST_F(RepositoryTest, FinishDeletingSparesAServiceRecreatedMeanwhile) {
  AddService("chat");
  ASSERT_TRUE(store_->services().MarkDeleting("chat"));
  ASSERT_TRUE(store_->services().Put(MakeServiceRow("chat", "new", Seconds{7}, Seconds{7})));
  EXPECT_FALSE(store_->services().Get("chat")->deleting);
  ASSERT_TRUE(store_->services().FinishDeleting("chat"));
  auto chat = store_->services().Get("chat");
  ASSERT_TRUE(chat) << "the re-created service's row was deleted";
  EXPECT_EQ(chat->spec, "new");
}

TEST_F(RepositoryTest, ManualOverrideIsStoredAndCleared) {
  AddService("chat");
  EXPECT_FALSE(store_->services().Get("chat")->manual_replicas.has_value());
  ASSERT_TRUE(store_->services().SetManualReplicas("chat", 0));
  EXPECT_EQ(store_->services().Get("chat")->manual_replicas, 0);  // 0 is a value, not "none"
  ASSERT_TRUE(store_->services().SetManualReplicas("chat", 4));
  EXPECT_EQ(store_->services().List()->at(0).manual_replicas, 4);
  ASSERT_TRUE(store_->services().SetManualReplicas("chat", std::nullopt));
  EXPECT_FALSE(store_->services().Get("chat")->manual_replicas.has_value());
  EXPECT_EQ(store_->services().SetManualReplicas("nope", 1).error().code,
            ErrorCode::kNotFound);
}

TEST_F(RepositoryTest, RuleCrudAndCascadeWithService) {
  AddService("chat");
  auto id = store_->rules().Add(Rule("chat", "queue-high"));
  ASSERT_TRUE(id) << id.error().ToString();
  auto second = store_->rules().Add(Rule("chat", "queue-low"));
  ASSERT_TRUE(second);
  EXPECT_GT(*second, *id);

  auto rule = store_->rules().Get(*id);
  ASSERT_TRUE(rule);
  EXPECT_EQ(rule->metric, "vllm:num_requests_waiting");
  EXPECT_EQ(rule->step_size, 2);
  EXPECT_EQ(rule->cooldown, Seconds{60});
  EXPECT_EQ(rule->max_replicas, 8);

  rule->threshold = 20;
  rule->enabled = false;
  rule->created_at = Seconds{999};
  ASSERT_TRUE(store_->rules().Update(*rule));
  EXPECT_EQ(store_->rules().Get(*id)->threshold, 20);
  EXPECT_FALSE(store_->rules().Get(*id)->enabled);
  EXPECT_EQ(store_->rules().Get(*id)->created_at, Seconds{5});  // kept from Add

  ASSERT_TRUE(store_->rules().Delete(*second));
  EXPECT_EQ(store_->rules().ListForService("chat")->size(), 1u);
  ASSERT_TRUE(store_->services().Delete("chat"));
  EXPECT_EQ(store_->rules().Get(*id).error().code, ErrorCode::kNotFound);
}

TEST_F(RepositoryTest, RuleErrorsSayWhatToFix) {
  auto orphan = store_->rules().Add(Rule("ghost", "r"));
  ASSERT_FALSE(orphan);
  EXPECT_EQ(orphan.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(orphan.error().message.find("service 'ghost' does not exist"), std::string::npos);

  AddService("chat");
  ASSERT_TRUE(store_->rules().Add(Rule("chat", "r")));
  auto duplicate = store_->rules().Add(Rule("chat", "r"));
  ASSERT_FALSE(duplicate);
  EXPECT_NE(duplicate.error().message.find("already has a rule named 'r'"), std::string::npos);

  RuleRow no_metric = Rule("chat", "x");
  no_metric.metric.clear();
  EXPECT_EQ(store_->rules().Add(no_metric).error().field, "metric");
  RuleRow missing = Rule("chat", "y");
  missing.id = 12345;
  EXPECT_EQ(store_->rules().Update(missing).error().code, ErrorCode::kNotFound);
}

TEST_F(RepositoryTest, ReplicaRoundTripsListsAndReplacesPerService) {
  ReplicaRow r;
  r.id = "chat-0";
  r.service = "chat";
  r.phase = "ready";
  r.pid = 4242;
  r.port = 8001;
  r.gpus = {0, 3};
  r.gpu_keys = {"GPU-aaa", "GPU-bbb"};
  r.lease_owner = "replica/chat-0";
  r.argv = {"vllm", "serve", "--port", "8001", "a;b c"};
  r.log_path = "/var/lib/gpuscale/logs/chat-0.log";
  r.restarts = 2;
  r.started_at = Seconds{100};
  r.phase_since = Seconds{150};
  r.updated_at = Seconds{160};
  ASSERT_TRUE(store_->replicas().Put(r));
  auto back = store_->replicas().Get("chat-0");
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(back->gpus, r.gpus);
  EXPECT_EQ(back->gpu_keys, r.gpu_keys);
  EXPECT_EQ(back->argv, r.argv);
  EXPECT_EQ(back->pid, 4242);
  EXPECT_EQ(back->restarts, 2);
  EXPECT_EQ(back->phase_since, Seconds{150});

  ReplicaRow other = r;
  other.id = "code-0";
  other.service = "code";
  ASSERT_TRUE(store_->replicas().Put(other));
  ReplicaRow next = r;
  next.id = "chat-1";
  ASSERT_TRUE(store_->replicas().ReplaceForService("chat", {next}));
  auto chat = store_->replicas().ListForService("chat");
  ASSERT_TRUE(chat);
  ASSERT_EQ(chat->size(), 1u);
  EXPECT_EQ((*chat)[0].id, "chat-1");
  EXPECT_EQ(store_->replicas().List()->size(), 2u);  // code-0 untouched
  EXPECT_FALSE(store_->replicas().ReplaceForService("chat", {other}));
  ASSERT_TRUE(store_->replicas().Delete("code-0"));
  EXPECT_EQ(store_->replicas().Delete("code-0").error().code, ErrorCode::kNotFound);
}

TEST_F(RepositoryTest, LeasesByOwnerAndReplaceAll) {
  ASSERT_TRUE(store_->leases().Put(LeaseRow{"GPU-b", 1, "", "replica/chat-0", Seconds{1}}));
  ASSERT_TRUE(store_->leases().Put(LeaseRow{"GPU-a", 0, "", "replica/chat-0", Seconds{1}}));
  ASSERT_TRUE(store_->leases().Put(LeaseRow{"GPU-c", 2, "", "job-7", Seconds{2}}));
  auto mine = store_->leases().ListForOwner("replica/chat-0");
  ASSERT_TRUE(mine);
  ASSERT_EQ(mine->size(), 2u);
  EXPECT_EQ((*mine)[0].key, "GPU-a");
  EXPECT_EQ(*store_->leases().DeleteOwner("replica/chat-0"), 2);
  EXPECT_EQ(store_->leases().Delete("GPU-a").error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(store_->leases().ReplaceAll({LeaseRow{"GPU-z", 7, "n1", "job-9", Seconds{3}}}));
  auto all = store_->leases().List();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].node, "n1");
  // A bad row aborts the whole replacement.
  EXPECT_FALSE(store_->leases().ReplaceAll({LeaseRow{"GPU-y", 0, "", "x", Seconds{0}},
                                            LeaseRow{"GPU-x", 0, "", "", Seconds{0}}}));
  EXPECT_EQ(store_->leases().List()->front().key, "GPU-z");
}

TEST_F(RepositoryTest, DecisionsNewestFirstWithLimit) {
  for (int i = 0; i < 5; ++i) {
    DecisionRow d;
    d.service = i % 2 == 0 ? "chat" : "code";
    d.at = Seconds{10.0 * i};
    d.policy = "target";
    d.desired_replicas = i;
    d.reason = "reason " + std::to_string(i);
    d.details = {"detail"};
    d.actions = {"start", "drain chat-1: fewest outstanding"};
    ASSERT_TRUE(store_->decisions().Append(d));
  }
  auto recent = store_->decisions().Recent("chat", 2);
  ASSERT_TRUE(recent);
  ASSERT_EQ(recent->size(), 2u);
  EXPECT_EQ((*recent)[0].desired_replicas, 4);
  EXPECT_EQ((*recent)[1].desired_replicas, 2);
  EXPECT_EQ((*recent)[0].actions.size(), 2u);
  EXPECT_EQ(store_->decisions().Recent("chat", 0).error().field, "limit");
  EXPECT_EQ(*store_->decisions().DeleteBefore(Seconds{25}, 100), 3);
}

// Retention reads and deletes the oldest rows by id, a bounded batch at a time
// (state/history_retention.h); the used bytes fall as pages are freed for reuse.
TEST_F(RepositoryTest, HistoryIsTrimmedOldestFirstInBoundedBatches) {
  EXPECT_EQ(*store_->decisions().OldestAt(), std::nullopt);
  EXPECT_EQ(*store_->events().OldestAt(), std::nullopt);
  const int64_t empty_bytes = *store_->UsedBytes();
  EXPECT_GT(empty_bytes, 0);
  for (int i = 0; i < 2000; ++i) {
    DecisionRow d;
    d.service = "chat";
    d.at = Seconds{100.0 + i};
    d.policy = "target";
    d.reason = std::string(200, 'r');
    ASSERT_TRUE(store_->decisions().Append(d));
    ASSERT_TRUE(store_->events().Append(EventRow{0, Seconds{100.0 + i}, "chat", "replica_started",
                                                 "r", std::string(200, 'm'), ""}));
  }
  const int64_t full_bytes = *store_->UsedBytes();
  EXPECT_GT(full_bytes, empty_bytes + 2 * 2000 * 200);
  EXPECT_EQ(*store_->decisions().OldestAt(), Seconds{100});
  // 1,500 rows are older than 1,600 s, but a call takes at most its batch of the oldest.
  EXPECT_EQ(*store_->decisions().DeleteBefore(Seconds{1600}, 1000), 1000);
  EXPECT_EQ(*store_->decisions().OldestAt(), Seconds{1100});
  EXPECT_EQ(*store_->decisions().DeleteBefore(Seconds{1600}, 1000), 500);
  EXPECT_EQ(*store_->decisions().DeleteBefore(Seconds{1600}, 1000), 0);
  EXPECT_EQ(*store_->decisions().OldestAt(), Seconds{1600});
  EXPECT_EQ(*store_->events().DeleteBefore(Seconds{1e9}, 5000), 2000);
  EXPECT_EQ(*store_->events().OldestAt(), std::nullopt);
  EXPECT_LT(*store_->UsedBytes(), full_bytes / 2);
}

TEST_F(RepositoryTest, EventsQueryByIdServiceAndKind) {
  struct Case {
    std::string service, kind;
  };
  const std::vector<Case> appended = {{"chat", "replica_started"}, {"code", "replica_started"},
                                      {"chat", "replica_crashed"}, {"", "daemon_started"},
                                      {"chat", "replica_started"}};
  std::vector<int64_t> ids;
  for (size_t i = 0; i < appended.size(); ++i) {
    auto id = store_->events().Append(EventRow{0, Seconds{double(i)}, appended[i].service,
                                               appended[i].kind, "r", "m", ""});
    ASSERT_TRUE(id);
    ids.push_back(*id);
  }
  EXPECT_EQ(*store_->events().LatestId(), ids.back());

  struct Query {
    EventQuery query;
    std::vector<size_t> expected;  // positions in `appended`
  };
  const std::vector<Query> table = {
      {{0, "", "", 100}, {0, 1, 2, 3, 4}},
      {{ids[1], "", "", 100}, {2, 3, 4}},
      {{0, "chat", "", 100}, {0, 2, 4}},
      {{0, "", "replica_started", 100}, {0, 1, 4}},
      {{0, "chat", "replica_started", 100}, {0, 4}},
      {{0, "", "", 2}, {0, 1}},
      {{ids[4], "", "", 100}, {}},
  };
  for (const Query& q : table) {
    auto events = store_->events().Query(q.query);
    ASSERT_TRUE(events);
    std::vector<int64_t> got, want;
    for (const EventRow& e : *events) got.push_back(e.id);
    for (size_t p : q.expected) want.push_back(ids[p]);
    EXPECT_EQ(got, want) << "since " << q.query.since_id << " service '" << q.query.service
                         << "' kind '" << q.query.kind << "' limit " << q.query.limit;
  }
  EXPECT_EQ(store_->events().Query({0, "", "", 0}).error().field, "limit");
  EXPECT_EQ(store_->events().Append(EventRow{}).error().field, "kind");
  EXPECT_EQ(*store_->events().DeleteBefore(Seconds{2}, 100), 2);
}

template <typename T>
void ExpectReadsBack(const Result<T>& read, const T& written) {
  ASSERT_TRUE(read) << read.error().ToString();
  EXPECT_EQ(*read, written);
}

// Each repository writes and reads every field of its row (store_test_util.h's rows set them
// all), whatever statement it uses.
TEST_F(RepositoryTest, EveryRowReadsBackEqualThroughItsRepository) {
  ASSERT_TRUE(store_->services().Put(FullService()));
  ExpectReadsBack(store_->services().Get("chat"), FullService());

  RuleRow rule = FullRule();
  Result<int64_t> rule_id = store_->rules().Add(rule);
  ASSERT_TRUE(rule_id) << rule_id.error().ToString();
  rule.id = *rule_id;
  ExpectReadsBack(store_->rules().Get(rule.id), rule);

  ASSERT_TRUE(store_->replicas().Put(FullReplica()));
  ExpectReadsBack(store_->replicas().Get("chat-3"), FullReplica());

  ASSERT_TRUE(store_->leases().Put(FullLease()));
  ExpectReadsBack(store_->leases().List(), std::vector<LeaseRow>{FullLease()});

  DecisionRow decision = FullDecision();
  Result<int64_t> decision_id = store_->decisions().Append(decision);
  ASSERT_TRUE(decision_id);
  decision.id = *decision_id;
  ExpectReadsBack(store_->decisions().Recent("chat", 1), std::vector<DecisionRow>{decision});

  EventRow event = FullEvent();
  Result<int64_t> event_id = store_->events().Append(event);
  ASSERT_TRUE(event_id);
  event.id = *event_id;
  ExpectReadsBack(store_->events().Query({}), std::vector<EventRow>{event});

  TaskRow task = FullTask();
  ExperimentRow experiment = FullExperiment();
  Result<AddedTask> added = store_->tasks().AddTask(task, {experiment});
  ASSERT_TRUE(added) << added.error().ToString();
  task.id = added->task_id;
  experiment.id = added->experiment_ids.at(0);
  experiment.task_id = task.id;  // AddTask sets it
  ExpectReadsBack(store_->tasks().GetTask(task.id), task);
  ExpectReadsBack(store_->tasks().GetExperiment(experiment.id), experiment);
}

}  // namespace
}  // namespace gpuscale::store
