"""The optimal Kafka Streams task assignment: the front door (:mod:`.opt`), the model and its plans
(:mod:`.balance`, :mod:`.model`, :mod:`.plan`), the flows (:mod:`.flow` over :mod:`.actives`, :mod:`.standbys`
and :mod:`.pricing`) and CP-SAT (:mod:`.cpsat` with :mod:`.cpsat_data`, :mod:`.cpsat_model` and :mod:`.cpsat_start`)."""
