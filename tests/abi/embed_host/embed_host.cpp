// Loads the plugins of the installation it runs against and applies one schedule rule, given
// on the command line, to a matmul; prints the number of loops before and after.
#include <iostream>
#include <memory>

#include "core/plugin/plugin_host.h"
#include "core/schedule/schedule.h"
#include "core/workload/library.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: embed_host RULE\n";
    return 2;
  }
  mt::PluginHost host;
  host.discover();
  auto sch = std::make_shared<mt::Schedule>(mt::make_workload("matmul(M=8,N=8,K=8)"));
  mt::BlockRV block = sch->all_blocks()[0];
  std::cout << sch->get_loops(block).size();
  host.create_schedule_rule(argv[1])->apply(sch, block);
  std::cout << " " << sch->get_loops(block).size() << "\n";
  return 0;
}
