"""The producer: what a send does, and where each part of it lives.

* :mod:`~rocketq.client.producer.facade` - :class:`~rocketq.client.producer.facade.Producer`, the
  class you use (``send``, ``send_async``, ``send_future``, ``send_callback``, ``send_oneway``,
  ``send_batch``), a thin synchronous front;
* :mod:`~rocketq.client.producer.core` - :class:`~rocketq.client.producer.core.ProducerCore`, the
  engine on the client's event loop: routes (and ``TBW102`` auto-creation), ids, compression,
  request building, and the three send drivers (on the loop, from a thread, from another loop);
* :mod:`~rocketq.client.producer.send_policy` - the one place that decides, from an attempt's
  outcome, the attempt count and the time left, whether a send is done, retried on another
  broker, or failed (RocketMQ's ``sendDefaultImpl`` rules), pure and tested without a broker;
* :mod:`~rocketq.client.producer.selection` - which queue an attempt goes to (a given queue, a
  selector such as :func:`~rocketq.client.producer.selection.select_by_hash`, or round robin
  avoiding the broker that just failed);
* :mod:`~rocketq.client.producer.transaction` - the transactional producer
  (:class:`~rocketq.client.producer.transaction.TransactionProducer`): half message, local
  transaction, END_TRANSACTION, and the answers to the broker's checks on a thread pool;
* :mod:`~rocketq.client.producer.request` - request-reply: what a request carries, and
  :func:`~rocketq.client.producer.request.create_reply` for the replying side (the producer's
  ``request`` waits for the reply the client instance hands over).

Checks of topics, groups and messages are :mod:`rocketq.client.validators`; tracing of sends is
:mod:`rocketq.client.trace`, plugged in through :class:`~rocketq.client.producer.core.SendTraceHook`.
"""
