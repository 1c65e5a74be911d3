// Operation counting for GFLOPS (see flop_count.h).
#include "core/workload/flop_count.h"

#include <algorithm>

namespace mt {

namespace {

bool is_data_type(const DType& t) {
  return t.is_float() || (t.is_int() && !(t == DType::index()));
}

double ops_of(const Expr& value) {
  double n = 0;
  post_order_visit(value, [&](const Expr& e) {
    switch (e->kind) {
    case ExprKind::Add:
    case ExprKind::Sub:
    case ExprKind::Mul:
    case ExprKind::Div:
    case ExprKind::Min:
    case ExprKind::Max:
    case ExprKind::Call:
      if (is_data_type(e->dtype)) n += 1;
      break;
    default:
      break;
    }
  });
  return n;
}

double count(const Stmt& s, double runs) {
  if (!s) return 0;
  switch (s->kind) {
  case StmtKind::For: {
    const auto* f = as<ForNode>(s);
    return count(f->body, runs * static_cast<double>(f->extent));
  }
  case StmtKind::Seq: {
    double n = 0;
    for (const Stmt& c : as<SeqNode>(s)->stmts)
      n += count(c, runs);
    return n;
  }
  case StmtKind::Store:
    return runs * ops_of(as<StoreNode>(s)->value);
  case StmtKind::IfThenElse: {
    const auto* i = as<IfThenElseNode>(s);
    return std::max(count(i->then_case, runs), count(i->else_case, runs));
  }
  case StmtKind::BlockRealize:
    // The init of a reduction only sets the identity: no arithmetic worth counting.
    return count(as<BlockRealizeNode>(s)->block->body, runs);
  case StmtKind::Allocate:
    return count(as<AllocateNode>(s)->body, runs);
  }
  return 0;
}

} // namespace

double count_flops(const Function& f) {
  return count(f.body, 1);
}

} // namespace mt
