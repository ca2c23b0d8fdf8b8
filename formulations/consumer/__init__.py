"""The optimal consumer-group assignment: the front door (:mod:`.opt`), the model (:mod:`.model`), its two proven
shortcuts (:mod:`.closed_form`, :mod:`.warm_start`), the min-cost flow (:mod:`.flow`) and networkx's independent
reference (:mod:`.nx_flow`)."""
