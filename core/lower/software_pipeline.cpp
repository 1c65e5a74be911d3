// Software pipelining at lowering: the loop restructuring and the slotted shared buffers (see
// software_pipeline.h).
#include "core/lower/software_pipeline.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace mt {

namespace {

using BufferSet = std::unordered_set<const BufferNode*>;

struct Accesses {
  BufferSet reads, writes;
  void merge(const Accesses& o) {
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
  }
};

void reads_in(const Expr& e, BufferSet& out) {
  if (!e) return;
  post_order_visit(e, [&](const Expr& x) {
    if (x->kind == ExprKind::Load) out.insert(x->buffer.get());
  });
}

Accesses accesses_of(const Stmt& s) {
  Accesses a;
  visit_stmts(s, [&](const Stmt& x) {
    if (x->kind == StmtKind::Store) {
      auto* n = as<StoreNode>(x);
      a.writes.insert(n->buffer.get());
      for (const Expr& i : n->indices)
        reads_in(i, a.reads);
      reads_in(n->value, a.reads);
    } else if (x->kind == StmtKind::IfThenElse) {
      reads_in(as<IfThenElseNode>(x)->condition, a.reads);
    }
    return true;
  });
  return a;
}

// How many loads and stores name each buffer under `s`.
std::unordered_map<const BufferNode*, int64_t> access_counts(const Stmt& s) {
  std::unordered_map<const BufferNode*, int64_t> n;
  auto count_loads = [&](const Expr& e) {
    if (!e) return;
    post_order_visit(e, [&](const Expr& x) {
      if (x->kind == ExprKind::Load) ++n[x->buffer.get()];
    });
  };
  visit_stmts(s, [&](const Stmt& x) {
    if (x->kind == StmtKind::Store) {
      auto* st = as<StoreNode>(x);
      ++n[st->buffer.get()];
      for (const Expr& i : st->indices)
        count_loads(i);
      count_loads(st->value);
    } else if (x->kind == StmtKind::IfThenElse) {
      count_loads(as<IfThenElseNode>(x)->condition);
    }
    return true;
  });
  return n;
}

BufferSet allocated_under(const Stmt& s) {
  BufferSet out;
  visit_stmts(s, [&](const Stmt& x) {
    if (x->kind == StmtKind::Allocate) out.insert(as<AllocateNode>(x)->buffer.get());
    return true;
  });
  return out;
}

// `s` with a copy of every loop variable defined in it: the prologue repeats the producers'
// nests, and each loop keeps a variable of its own.
Stmt with_fresh_loop_vars(const Stmt& s) {
  VarMap fresh;
  visit_stmts(s, [&](const Stmt& x) {
    if (x->kind == StmtKind::For) {
      const Expr& v = as<ForNode>(x)->loop_var;
      fresh.emplace(v.get(), make_var(v->name, v->dtype));
    }
    return true;
  });
  Stmt renamed = transform_stmts(s, [&](const Stmt& x) -> Stmt {
    if (x->kind != StmtKind::For) return x;
    auto* f = as<ForNode>(x);
    return make_for(fresh.at(f->loop_var.get()), f->extent, f->body, f->for_kind, f->thread_tag,
                    f->annotations);
  });
  return substitute(renamed, fresh);
}

// The producers' top loops marked for asynchronous copies.
Stmt mark_async(const Stmt& s) {
  std::vector<Stmt> items = s->kind == StmtKind::Seq ? as<SeqNode>(s)->stmts : std::vector{s};
  for (Stmt& item : items) {
    if (item->kind != StmtKind::For) continue;
    Annotations ann = as<ForNode>(item)->annotations;
    ann[kSoftwarePipelineAsyncCopy] = int64_t{1};
    item = with_annotations(item, std::move(ann));
  }
  return make_seq(std::move(items));
}

int64_t count_in(const std::unordered_map<const BufferNode*, int64_t>& counts,
                 const BufferNode* b) {
  auto it = counts.find(b);
  return it == counts.end() ? 0 : it->second;
}

class Pipeliner {
public:
  explicit Pipeliner(const Stmt& body) : counts_(access_counts(body)) {
    visit_stmts(body, [&](const Stmt& x) {
      if (x->kind == StmtKind::Allocate) allocated_.insert(as<AllocateNode>(x)->buffer.get());
      return true;
    });
  }

  Stmt run(const Stmt& body) {
    Stmt out = transform_stmts(body, [&](const Stmt& s) -> Stmt {
      if (s->kind == StmtKind::For && as<ForNode>(s)->annotations.count(kSoftwarePipelineStages))
        return pipeline(s);
      return s;
    });
    if (slotted_.empty()) return out;
    return transform_stmts(out, [&](const Stmt& s) -> Stmt {
      if (s->kind != StmtKind::Allocate) return s;
      auto it = slotted_.find(as<AllocateNode>(s)->buffer.get());
      return it == slotted_.end() ? s : make_allocate(it->second, as<AllocateNode>(s)->body);
    });
  }

private:
  Stmt pipeline(const Stmt& annotated) {
    auto* f = as<ForNode>(annotated);
    Annotations ann = f->annotations;
    const auto* stages_value = std::get_if<int64_t>(&ann.at(kSoftwarePipelineStages));
    int64_t stages = stages_value ? *stages_value : 0;
    int64_t spare = 0;
    if (auto at = ann.find(kSoftwarePipelineSpareSlots); at != ann.end()) {
      if (const auto* n = std::get_if<int64_t>(&at->second); n && *n > 0) spare = *n;
      ann.erase(at);
    }
    ann.erase(kSoftwarePipelineStages);
    Stmt as_it_was = make_for(f->loop_var, f->extent, f->body, f->for_kind, f->thread_tag, ann);
    if (stages < 2 || f->for_kind != ForKind::Serial || f->extent < 2) return as_it_was;
    stages = std::min(stages, f->extent);

    std::vector<Stmt> items =
        f->body->kind == StmtKind::Seq ? as<SeqNode>(f->body)->stmts : std::vector{f->body};
    const BufferSet inside = allocated_under(f->body);
    const auto in_loop = access_counts(f->body);
    // The producers: the leading statements that only fill shared buffers of the whole loop.
    BufferSet produced;
    Accesses producers, consumers;
    size_t n_producers = 0;
    for (; n_producers < items.size(); ++n_producers) {
      Accesses a = accesses_of(items[n_producers]);
      bool fills_shared = !a.writes.empty();
      for (const BufferNode* b : a.writes)
        fills_shared = fills_shared && b->scope == "shared" && allocated_.count(b) &&
                       !inside.count(b) && count_in(counts_, b) == count_in(in_loop, b);
      if (!fills_shared) break;
      producers.merge(a);
    }
    for (size_t x = n_producers; x < items.size(); ++x)
      consumers.merge(accesses_of(items[x]));
    if (n_producers == 0 || n_producers == items.size()) return as_it_was;
    bool feeds_consumers = false;
    for (const BufferNode* b : producers.writes) {
      if (consumers.writes.count(b)) return as_it_was;
      feeds_consumers = feeds_consumers || consumers.reads.count(b);
    }
    for (const BufferNode* b : producers.reads)
      if (producers.writes.count(b) || consumers.writes.count(b)) return as_it_was;
    if (!feeds_consumers) return as_it_was;

    std::unordered_map<const BufferNode*, Buffer> slotted;
    for (const BufferNode* b : producers.writes) {
      std::vector<int64_t> shape = b->shape;
      shape.insert(shape.begin(), stages + spare);
      slotted[b] = make_buffer(b->name, b->dtype, shape, b->scope);
    }
    // Every access to a slotted buffer gets the slot as its leading index.
    auto in_slot = [&](const Stmt& st, const Expr& slot) {
      auto loads = [&](const Expr& e) {
        return transform(e, [&](const Expr& x) -> Expr {
          if (x->kind != ExprKind::Load) return x;
          auto it = slotted.find(x->buffer.get());
          if (it == slotted.end()) return x;
          std::vector<Expr> idx = x->args;
          idx.insert(idx.begin(), slot);
          return make_load(it->second, std::move(idx));
        });
      };
      Stmt with_loads = transform_exprs(st, loads);
      return transform_stmts(with_loads, [&](const Stmt& x) -> Stmt {
        if (x->kind != StmtKind::Store) return x;
        auto* n = as<StoreNode>(x);
        auto it = slotted.find(n->buffer.get());
        if (it == slotted.end()) return x;
        std::vector<Expr> idx = n->indices;
        idx.insert(idx.begin(), slot);
        return make_store(it->second, std::move(idx), n->value);
      });
    };

    const Expr& k = f->loop_var;
    const Expr ahead = int_imm(stages - 1), n_slots = int_imm(stages + spare);
    Stmt produce = make_seq(std::vector<Stmt>(items.begin(), items.begin() + n_producers));
    Stmt consume = make_seq(std::vector<Stmt>(items.begin() + n_producers, items.end()));

    Expr p = make_var(k->name + "_prologue", k->dtype);
    Stmt prologue_body =
        with_fresh_loop_vars(mark_async(in_slot(substitute(produce, {{k.get(), p}}), p)));
    Stmt prologue = make_for(p, stages - 1, prologue_body, ForKind::Serial, "",
                             {{kSoftwarePipelinePrologue, stages}});

    Stmt fetch_ahead = make_if(k < int_imm(f->extent - (stages - 1)),
                               mark_async(in_slot(substitute(produce, {{k.get(), k + ahead}}),
                                                  floormod(k + ahead, n_slots))));
    Annotations loop_ann = ann;
    loop_ann[kSoftwarePipelineStages] = stages;
    if (spare > 0) loop_ann[kSoftwarePipelineSpareSlots] = spare;
    Stmt loop =
        make_for(k, f->extent, make_seq({fetch_ahead, in_slot(consume, floormod(k, n_slots))}),
                 ForKind::Serial, "", loop_ann);
    slotted_.insert(slotted.begin(), slotted.end());
    return make_seq({prologue, loop});
  }

  std::unordered_map<const BufferNode*, int64_t> counts_;
  BufferSet allocated_;
  std::unordered_map<const BufferNode*, Buffer> slotted_;
};

} // namespace

Stmt software_pipeline(const Stmt& body) {
  if (!body) return body;
  bool any = false;
  visit_stmts(body, [&](const Stmt& x) {
    any = any ||
          (x->kind == StmtKind::For && as<ForNode>(x)->annotations.count(kSoftwarePipelineStages));
    return !any;
  });
  return any ? Pipeliner(body).run(body) : body;
}

} // namespace mt
