// Order processing: a domain model, a repository interface and a service.
using System;
using System.Collections.Generic;
using System.Threading.Tasks;

namespace Shop.Orders
{
    public enum OrderState { Open, Paid, Shipped }

    public record LineItem(string Sku, int Quantity, decimal Price);

    public interface IOrderRepository
    {
        Task<Order?> FindAsync(Guid id);
        Task SaveAsync(Order order);
    }

    public struct Money
    {
        public decimal Amount { get; }
        public Money(decimal amount) => Amount = amount;
    }

    /// <summary>An order with its line items.</summary>
    public class Order
    {
        public const int MaxItems = 100;

        public Guid Id { get; } = Guid.NewGuid();
        public OrderState State { get; private set; } = OrderState.Open;
        private readonly List<LineItem> _items = new();

        public Order() { }

        public Order(IEnumerable<LineItem> items)
        {
            _items.AddRange(items);
        }

        public decimal Total()
        {
            decimal sum = 0;
            foreach (var item in _items) sum += item.Price * item.Quantity;
            return sum;
        }

        [Obsolete("use Pay(Money)")]
        public void Pay() => State = OrderState.Paid;

        public void Pay(Money money) => State = OrderState.Paid;
    }

    public sealed class OrderService
    {
        private readonly IOrderRepository _repository;

        public OrderService(IOrderRepository repository) => _repository = repository;

        public async Task<bool> ShipAsync(Guid id)
        {
            var order = await _repository.FindAsync(id);
            return order is { State: OrderState.Paid };
        }
    }
}
